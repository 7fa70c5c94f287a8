"""Mutants of solutions/training.py: each is one bug a student plausibly writes."""

import os

import torch
import torch.nn.functional as F

from grader.authoring.mutants import edit, mutant


edit("train_no_zero_grad", within="train",
     why="never clears the gradients: every step adds to the last one's",
     old="            optimizer.zero_grad(set_to_none=True)\n",
     new="")


edit("train_zero_fill", within="train",
     why="zero_grad() without set_to_none: the gradient tensors stay allocated between steps",
     edits=[(('raise ValueError(f"num_steps ({num_steps}) and checkpoint_every ({checkpoint_every}) must be >= 0")\n'
            "    device = torch.device(device)\n"
            "    start = 0\n"
            "    if checkpoint_path is not None and os.path.exists(checkpoint_path):\n"
            "        start = load_checkpoint(checkpoint_path, model, optimizer)"),
            ('raise ValueError("bad arguments")\n'
            "    start = load_checkpoint(checkpoint_path, model, optimizer) if checkpoint_path and os.path.exists(checkpoint_path) else 0")),
           ("optimizer.zero_grad(set_to_none=True)", "optimizer.zero_grad(set_to_none=False)"),
           ("losses.append(loss.item() if isinstance(loss, torch.Tensor) else float(loss))",
            "losses.append(float(loss))"),
           ("if checkpoint_path is not None and checkpoint_every > 0 and (step + 1) % checkpoint_every == 0:",
            "if checkpoint_path and checkpoint_every and (step + 1) % checkpoint_every == 0:")])


edit("train_zero_grad_late", within="train",
     why="clears the gradients between backward and step: the optimizer never moves",
     edits=[("            optimizer.zero_grad(set_to_none=True)\n",
             ""),
            ("            loss.backward()\n",
             ("            loss.backward()\n"
              "            optimizer.zero_grad(set_to_none=True)\n"))])


edit("train_two_batches", within="train",
     why="draws a fresh batch for the loss after drawing one for logging: two get_batch calls per step",
     old="x, y = get_batch()",
     new=("get_batch()\n"
          "        x, y = get_batch()"))


edit("train_resume_from_zero", within="train",
     why="loads the checkpoint but starts counting from 0 again: the resumed run is too long",
     old="start = load_checkpoint(checkpoint_path, model, optimizer)",
     new="load_checkpoint(checkpoint_path, model, optimizer)")


edit("train_saves_step_index", within="train",
     why="saves the index of the step just done as the iteration: the resumed run repeats a step",
     old="save_checkpoint(model, optimizer, step + 1, checkpoint_path)",
     new="save_checkpoint(model, optimizer, step, checkpoint_path)")


edit("train_checkpoint_off_by_one", within="train",
     why="checkpoints when step % every == 0 (before the step's update is counted)",
     old="(step + 1) % checkpoint_every == 0",
     new="step % checkpoint_every == 0")


edit("train_saves_model_only", within="train",
     why="checkpoints with torch.save of the model alone: the optimizer state and generators are lost",
     edits=[("start = load_checkpoint(checkpoint_path, model, optimizer)",
             ("saved = torch.load(checkpoint_path, weights_only=True)\n"
              '        model.load_state_dict(saved["model"])\n'
              '        start = saved["iteration"]')),
            ("save_checkpoint(model, optimizer, step + 1, checkpoint_path)",
             'torch.save({"model": model.state_dict(), "iteration": step + 1}, checkpoint_path)')])


edit("train_sum_loss", within="train",
     why="sums the squared errors instead of averaging them",
     old="loss = F.mse_loss(model(x), y)",
     new='loss = F.mse_loss(model(x), y, reduction="sum")')


edit("train_ignores_mixed_precision", within="train",
     why="ignores mixed_precision: every step runs in float32",
     old=("        if mixed_precision:\n"
          "            loss = mixed_precision_step(model, optimizer, F.mse_loss, x, y)\n"
          "        else:\n"
          "            optimizer.zero_grad(set_to_none=True)\n"
          "            loss = F.mse_loss(model(x), y)\n"
          "            loss.backward()\n"
          "            optimizer.step()\n"),
     new=("        optimizer.zero_grad(set_to_none=True)\n"
          "        loss = F.mse_loss(model(x), y)\n"
          "        loss.backward()\n"
          "        optimizer.step()\n"))


edit("train_loss_after_step", within="train",
     why="records the loss of the batch after the update (a second forward pass)",
     old="losses.append(loss.item() if isinstance(loss, torch.Tensor) else float(loss))",
     new=("with torch.no_grad():\n"
          "            losses.append(F.mse_loss(model(x), y).item())"))


edit("train_no_checks", within="train",
     why="no argument checks: a negative number of steps silently trains nothing",
     edits=[(("if num_steps < 0 or checkpoint_every < 0:\n"
            '        raise ValueError(f"num_steps ({num_steps}) and checkpoint_every ({checkpoint_every}) must be >= 0")\n'
            "    device = torch.device(device)\n"
            "    start = 0\n"
            "    if checkpoint_path is not None and os.path.exists(checkpoint_path):\n"
            "        start = load_checkpoint(checkpoint_path, model, optimizer)"),
            "start = load_checkpoint(checkpoint_path, model, optimizer) if checkpoint_path and os.path.exists(checkpoint_path) else 0"),
           ("losses.append(loss.item() if isinstance(loss, torch.Tensor) else float(loss))",
            "losses.append(float(loss))"),
           ("if checkpoint_path is not None and checkpoint_every > 0 and (step + 1) % checkpoint_every == 0:",
            "if checkpoint_path and checkpoint_every and (step + 1) % checkpoint_every == 0:")])


edit("step_flops_full_backward", within="step_flops",
     why="counts the full 4·B·P backward: autograd skips the input gradient of the first layer",
     old="backward = 4 * batch * params - 2 * batch * first",
     new="backward = 4 * batch * params")


edit("step_flops_square_first", within="step_flops",
     why="subtracts a dim x dim first layer even when there are no square layers",
     old=("first = dim * dim if num_layers > 0 else dim\n"
          "    forward = 2 * batch * params\n"
          "    backward = 4 * batch * params - 2 * batch * first"),
     new="forward, backward = 2 * batch * params, 4 * batch * params - 2 * batch * dim * dim")


edit("step_flops_no_factor_two", within="step_flops",
     why="one FLOP per weight per example in the forward pass (forgets the add)",
     old=("forward = 2 * batch * params\n"
          "    backward = 4 * batch * params - 2 * batch * first\n"
          '    return {"forward": forward, "backward": backward, "total": forward + backward, "six_bp": 6 * batch * params}'),
     new=("forward, backward = batch * params, 2 * batch * params - batch * first\n"
          '    return {"forward": forward, "backward": backward, "total": forward + backward, "six_bp": 3 * batch * params}'))


edit("step_flops_no_final", within="step_flops",
     why="P counts only the square layers (forgets final)",
     edits=[("params = cruncher_num_parameters(dim, num_layers)", "params = num_layers * dim * dim"),
           (("forward = 2 * batch * params\n"
            "    backward = 4 * batch * params - 2 * batch * first"),
            "forward, backward = 2 * batch * params, 4 * batch * params - 2 * batch * first")])


edit("weight_bytes_always_fp32", within="weight_bytes",
     why="assumes 4 bytes per value whatever the dtype",
     old="return rows * cols * dtype.itemsize",
     new="return rows * cols * 4")


edit("flops_delivered_minutes", within="flops_delivered",
     why="counts minutes, not seconds, in a day",
     old="return float(num_gpus * flop_per_sec * mfu * days * 24 * 60 * 60)",
     new="return float(num_gpus * flop_per_sec * mfu * days * 24 * 60)")


edit("flops_delivered_no_mfu", within="flops_delivered",
     why="ignores the MFU",
     old="return float(num_gpus * flop_per_sec * mfu * days * 24 * 60 * 60)",
     new="return float(num_gpus * flop_per_sec * days * 24 * 60 * 60)")


edit("elementwise_flops_one_op", within="elementwise_flops",
     why="ignores ops_per_element",
     old="return rows * cols * ops_per_element",
     new="return rows * cols")


# ---- independent breaking pass (BREAK_NEW.md, 2026-11-22) ----


edit("train_bk_ckpt_step_not_plus_one", within="train",
     why="bk: the checkpoint records `step` (steps begun), not step + 1: a resume repeats one step",
     edits=[(('raise ValueError(f"num_steps ({num_steps}) and checkpoint_every ({checkpoint_every}) must be >= 0")\n'
            "    device = torch.device(device)"),
            'raise ValueError("negative")'),
           ("losses.append(loss.item() if isinstance(loss, torch.Tensor) else float(loss))",
            "losses.append(float(loss))"),
           ("save_checkpoint(model, optimizer, step + 1, checkpoint_path)",
            "save_checkpoint(model, optimizer, step, checkpoint_path)")])


edit("train_bk_ckpt_at_step_start", within="train",
     why="bk: checkpoints at the start of a step (step % every == 0, step > 0): the run's last checkpoint "
         "is never written",
     edits=[(('raise ValueError(f"num_steps ({num_steps}) and checkpoint_every ({checkpoint_every}) must be >= 0")\n'
            "    device = torch.device(device)"),
            'raise ValueError("negative")'),
           ("        x, y = get_batch()",
            ("        if checkpoint_path is not None and checkpoint_every > 0 and step > start and step % checkpoint_every == 0:\n"
            "            save_checkpoint(model, optimizer, step, checkpoint_path)\n"
            "        x, y = get_batch()")),
           (("losses.append(loss.item() if isinstance(loss, torch.Tensor) else float(loss))\n"
            "        if checkpoint_path is not None and checkpoint_every > 0 and (step + 1) % checkpoint_every == 0:\n"
            "            save_checkpoint(model, optimizer, step + 1, checkpoint_path)"),
            "losses.append(float(loss))")])


edit("train_bk_ckpt_off_by_one", within="train",
     why="bk: checkpoints when step % every == 0 (after steps 1, k+1, ...), labels consistent but the wrong "
         "steps",
     edits=[(('raise ValueError(f"num_steps ({num_steps}) and checkpoint_every ({checkpoint_every}) must be >= 0")\n'
            "    device = torch.device(device)"),
            'raise ValueError("negative")'),
           ("losses.append(loss.item() if isinstance(loss, torch.Tensor) else float(loss))",
            "losses.append(float(loss))"),
           ("if checkpoint_path is not None and checkpoint_every > 0 and (step + 1) % checkpoint_every == 0:",
            "if checkpoint_path is not None and checkpoint_every > 0 and step % checkpoint_every == 0:")])


edit("train_bk_resume_skips_batches", within="train",
     why="bk: on resume, fast-forwards the data by drawing (and discarding) the batches of the steps "
         "already done",
     edits=[(('raise ValueError(f"num_steps ({num_steps}) and checkpoint_every ({checkpoint_every}) must be >= 0")\n'
            "    device = torch.device(device)"),
            'raise ValueError("negative")'),
           ("for step in range(start, num_steps):", "for step in range(num_steps):"),
           ("x, y = get_batch()",
            ("x, y = get_batch()\n"
            "        if step < start:\n"
            "            continue")),
           ("losses.append(loss.item() if isinstance(loss, torch.Tensor) else float(loss))",
            "losses.append(float(loss))")])


edit("train_bk_reseeds", within="train",
     why="bk: seeds torch with 0 on a fresh start 'for reproducibility', replacing the caller's generator "
         "state",
     edits=[(('raise ValueError(f"num_steps ({num_steps}) and checkpoint_every ({checkpoint_every}) must be >= 0")\n'
            "    device = torch.device(device)"),
            'raise ValueError("negative")'),
           ("start = load_checkpoint(checkpoint_path, model, optimizer)",
            ("start = load_checkpoint(checkpoint_path, model, optimizer)\n"
            "    else:\n"
            "        torch.manual_seed(0)")),
           ("losses.append(loss.item() if isinstance(loss, torch.Tensor) else float(loss))",
            "losses.append(float(loss))")])


edit("train_bk_num_steps_relative", within="train",
     why="bk: num_steps counted from the resume point (runs num_steps more steps after a resume)",
     edits=[(('raise ValueError(f"num_steps ({num_steps}) and checkpoint_every ({checkpoint_every}) must be >= 0")\n'
            "    device = torch.device(device)"),
            'raise ValueError("negative")'),
           ("for step in range(start, num_steps):", "for step in range(start, start + num_steps):"),
           ("losses.append(loss.item() if isinstance(loss, torch.Tensor) else float(loss))",
            "losses.append(float(loss))")])


edit("train_bk_every_zero_crash", within="train",
     why="bk: no guard on checkpoint_every == 0 when a path is given (ZeroDivisionError)",
     edits=[(('raise ValueError(f"num_steps ({num_steps}) and checkpoint_every ({checkpoint_every}) must be >= 0")\n'
            "    device = torch.device(device)"),
            'raise ValueError("negative")'),
           ("losses.append(loss.item() if isinstance(loss, torch.Tensor) else float(loss))",
            "losses.append(float(loss))"),
           ("if checkpoint_path is not None and checkpoint_every > 0 and (step + 1) % checkpoint_every == 0:",
            "if checkpoint_path is not None and (step + 1) % checkpoint_every == 0:")])


edit("train_bk_resume_needs_every", within="train",
     why="bk: resumes only when checkpoint_every > 0 (a path with every=0 ignores an existing checkpoint)",
     old="if checkpoint_path is not None and os.path.exists(checkpoint_path):",
     new="if checkpoint_path is not None and checkpoint_every > 0 and os.path.exists(checkpoint_path):")


edit("train_bk_no_negative_steps_check", within="train",
     why="bk: no ValueError for num_steps < 0 (returns [])",
     edits=[(("if num_steps < 0 or checkpoint_every < 0:\n"
            '        raise ValueError(f"num_steps ({num_steps}) and checkpoint_every ({checkpoint_every}) must be >= 0")\n'
            "    device = torch.device(device)"),
            ("if checkpoint_every < 0:\n"
            '        raise ValueError("negative")')),
           ("losses.append(loss.item() if isinstance(loss, torch.Tensor) else float(loss))",
            "losses.append(float(loss))")])


edit("train_bk_no_negative_every_check", within="train",
     why="bk: no ValueError for checkpoint_every < 0 (never saves)",
     edits=[(("if num_steps < 0 or checkpoint_every < 0:\n"
            '        raise ValueError(f"num_steps ({num_steps}) and checkpoint_every ({checkpoint_every}) must be >= 0")\n'
            "    device = torch.device(device)"),
            ("if num_steps < 0:\n"
            '        raise ValueError("negative")')),
           ("losses.append(loss.item() if isinstance(loss, torch.Tensor) else float(loss))",
            "losses.append(float(loss))")])


edit("train_bk_zero_grad_keeps_buffers", within="train",
     why="bk: zero_grad(set_to_none=False): the P gradient buffers stay allocated (zeros) through the next "
         "forward",
     edits=[(('raise ValueError(f"num_steps ({num_steps}) and checkpoint_every ({checkpoint_every}) must be >= 0")\n'
            "    device = torch.device(device)"),
            'raise ValueError("negative")'),
           ("optimizer.zero_grad(set_to_none=True)", "optimizer.zero_grad(set_to_none=False)"),
           ("losses.append(loss.item() if isinstance(loss, torch.Tensor) else float(loss))",
            "losses.append(float(loss))")])


edit("train_bk_zero_grad_at_end", within="train",
     why="bk: zero_grad at the end of each step: gradients already on the model when train starts leak into "
         "step one",
     edits=[(('raise ValueError(f"num_steps ({num_steps}) and checkpoint_every ({checkpoint_every}) must be >= 0")\n'
            "    device = torch.device(device)"),
            'raise ValueError("negative")'),
           ("            optimizer.zero_grad(set_to_none=True)\n", ""),
           ("optimizer.step()",
            ("optimizer.step()\n"
            "            optimizer.zero_grad(set_to_none=True)")),
           ("losses.append(loss.item() if isinstance(loss, torch.Tensor) else float(loss))",
            "losses.append(float(loss))")])


edit("train_bk_tensor_losses", within="train",
     why="bk: records the loss tensors (loss.detach()), not Python floats",
     edits=[(('raise ValueError(f"num_steps ({num_steps}) and checkpoint_every ({checkpoint_every}) must be >= 0")\n'
            "    device = torch.device(device)"),
            'raise ValueError("negative")'),
           ("loss = mixed_precision_step(model, optimizer, F.mse_loss, x, y)",
            "loss = torch.tensor(mixed_precision_step(model, optimizer, F.mse_loss, x, y))"),
           ("losses.append(loss.item() if isinstance(loss, torch.Tensor) else float(loss))",
            "losses.append(loss.detach())")])


edit("train_bk_loss_after_step", within="train",
     why="bk: records the loss recomputed after optimizer.step() (the updated model's loss on the batch)",
     edits=[(('raise ValueError(f"num_steps ({num_steps}) and checkpoint_every ({checkpoint_every}) must be >= 0")\n'
            "    device = torch.device(device)"),
            'raise ValueError("negative")'),
           ("loss = mixed_precision_step(model, optimizer, F.mse_loss, x, y)",
            "mixed_precision_step(model, optimizer, F.mse_loss, x, y)"),
           (("loss = F.mse_loss(model(x), y)\n"
            "            loss.backward()"),
            "F.mse_loss(model(x), y).backward()"),
           ("losses.append(loss.item() if isinstance(loss, torch.Tensor) else float(loss))",
            ("with torch.no_grad():\n"
            "            losses.append(F.mse_loss(model(x), y).item())"))])


edit("train_bk_ignores_mixed_precision", within="train",
     why="bk: ignores mixed_precision (always the float32 step)",
     edits=[(('raise ValueError(f"num_steps ({num_steps}) and checkpoint_every ({checkpoint_every}) must be >= 0")\n'
            "    device = torch.device(device)"),
            'raise ValueError("negative")'),
           (("if mixed_precision:\n"
            "            loss = mixed_precision_step(model, optimizer, F.mse_loss, x, y)\n"
            "        else:\n"
            "            optimizer.zero_grad(set_to_none=True)\n"
            "            loss = F.mse_loss(model(x), y)\n"
            "            loss.backward()\n"
            "            optimizer.step()\n"
            "        losses.append(loss.item() if isinstance(loss, torch.Tensor) else float(loss))"),
            ("optimizer.zero_grad(set_to_none=True)\n"
            "        loss = F.mse_loss(model(x), y)\n"
            "        loss.backward()\n"
            "        optimizer.step()\n"
            "        losses.append(float(loss))"))])


edit("train_bk_autocast_cuda_only", within="train",
     why="bk: inlines autocast with device_type='cuda' (disabled on the CPU: the 'mixed' step runs in float32)",
     old="loss = mixed_precision_step(model, optimizer, F.mse_loss, x, y)",
     new=("import warnings\n"
          "\n"
          "            optimizer.zero_grad(set_to_none=True)\n"
          "            with warnings.catch_warnings():\n"
          '                warnings.simplefilter("ignore")\n'
          '                with torch.autocast("cuda", dtype=torch.bfloat16):\n'
          "                    loss = F.mse_loss(model(x), y)\n"
          "            loss.backward()\n"
          "            optimizer.step()"))


edit("train_bk_ckpt_without_rng", within="train",
     why="bk: its own torch.save of model + optimizer state only: the generators are not restored on resume",
     edits=[(('raise ValueError(f"num_steps ({num_steps}) and checkpoint_every ({checkpoint_every}) must be >= 0")\n'
            "    device = torch.device(device)"),
            'raise ValueError("negative")'),
           ("start = load_checkpoint(checkpoint_path, model, optimizer)",
            ("state = torch.load(checkpoint_path, weights_only=False)\n"
            '        model.load_state_dict(state["model"])\n'
            '        optimizer.load_state_dict(state["optimizer"])\n'
            '        start = int(state["iteration"])')),
           ("losses.append(loss.item() if isinstance(loss, torch.Tensor) else float(loss))",
            "losses.append(float(loss))"),
           ("save_checkpoint(model, optimizer, step + 1, checkpoint_path)",
            'torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": step + 1}, checkpoint_path)')])


@mutant(replaces="train", why="bk: loads the checkpoint after drawing the first batch (the resumed run's first batch comes from the pre-load generator)", against="0c2bd5eb92dd")
def train_bk_load_after_first_batch(model, optimizer, get_batch, num_steps, *, checkpoint_path=None, checkpoint_every=0, mixed_precision=False, device="cpu"):
    if num_steps < 0 or checkpoint_every < 0:
        raise ValueError("negative")
    losses = []
    step = 0
    loaded = False
    while step < num_steps:
        x, y = get_batch()
        if not loaded:
            loaded = True
            if checkpoint_path is not None and os.path.exists(checkpoint_path):
                step = load_checkpoint(checkpoint_path, model, optimizer)
                if step >= num_steps:
                    break
        x, y = x.to(device), y.to(device)
        if mixed_precision:
            loss = mixed_precision_step(model, optimizer, F.mse_loss, x, y)
        else:
            optimizer.zero_grad(set_to_none=True)
            loss = F.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
        losses.append(float(loss))
        if checkpoint_path is not None and checkpoint_every > 0 and (step + 1) % checkpoint_every == 0:
            save_checkpoint(model, optimizer, step + 1, checkpoint_path)
        step += 1
    return losses


edit("step_flops_bk_full_backward", within="step_flops",
     why="bk: the lecture's 4·B·P backward, without removing the first layer's input gradient",
     old="backward = 4 * batch * params - 2 * batch * first",
     new="backward = 4 * batch * params")


edit("step_flops_bk_first_always_square", within="step_flops",
     why="bk: the first layer is always dim x dim, also when num_layers == 0 (then it is final, dim x 1)",
     edits=[("    first = dim * dim if num_layers > 0 else dim\n", ""),
           ("backward = 4 * batch * params - 2 * batch * first",
            "backward = 4 * batch * params - 2 * batch * dim * dim")])


edit("step_flops_bk_removes_last", within="step_flops",
     why="bk: removes the last layer's (final, dim x 1) input gradient instead of the first's",
     edits=[("    first = dim * dim if num_layers > 0 else dim\n", ""),
           ("backward = 4 * batch * params - 2 * batch * first",
            "backward = 4 * batch * params - 2 * batch * dim")])


edit("step_flops_bk_half_skip", within="step_flops",
     why="bk: removes B·d_in·d_out (a multiply, no add) for the skipped input gradient",
     old="backward = 4 * batch * params - 2 * batch * first",
     new="backward = 4 * batch * params - batch * first")


edit("step_flops_bk_floats", within="step_flops",
     why="bk: float arithmetic (6.0 * B * P): values right, types float not int",
     old="params = cruncher_num_parameters(dim, num_layers)",
     new="params = float(cruncher_num_parameters(dim, num_layers))")


edit("step_flops_bk_params_no_final", within="step_flops",
     why="bk: P counts only the dim x dim layers (forgets final)",
     old="params = cruncher_num_parameters(dim, num_layers)",
     new="params = dim * dim * num_layers")


# (bk: two step_mfu mutants, "times the warm-up step too" and "six_bp as flops_per_step", are
#  GPU-only: step_mfu needs torch.cuda.get_device_name, so `grader validate` on a CPU cannot
#  prove them caught.  They live in /work/coord/break_training.py; on a GPU,
#  test_step_mfu_on_cuda catches them (get_batch count 1 + num_steps; flops_per_step).)


edit("weight_bytes_bk_float", within="weight_bytes",
     why="bk: bits / 8 from torch.finfo: a float, not an int",
     old="return rows * cols * dtype.itemsize",
     new="return rows * cols * torch.finfo(dtype).bits / 8")


edit("weight_bytes_bk_always_fp32", within="weight_bytes",
     why="bk: assumes float32's 4 bytes whatever the dtype",
     old="return rows * cols * dtype.itemsize",
     new="return rows * cols * 4")


edit("weight_bytes_bk_gib", within="weight_bytes",
     why="bk: reports GiB (the lecture's 2.3) instead of bytes",
     old="return rows * cols * dtype.itemsize",
     new="return rows * cols * dtype.itemsize // 2**30")


edit("flops_delivered_bk_no_mfu", within="flops_delivered",
     why="bk: ignores mfu",
     old="return float(num_gpus * flop_per_sec * mfu * days * 24 * 60 * 60)",
     new="return float(num_gpus * flop_per_sec * days * 24 * 60 * 60)")


edit("flops_delivered_bk_weeks", within="flops_delivered",
     why="bk: treats days as weeks' worth of the lecture's 7 days (days * 7 * 86400)",
     old="return float(num_gpus * flop_per_sec * mfu * days * 24 * 60 * 60)",
     new="return float(num_gpus * flop_per_sec * mfu * days * 7 * 24 * 60 * 60)")


edit("flops_delivered_bk_hours", within="flops_delivered",
     why="bk: 3600 seconds per day (hours)",
     old="return float(num_gpus * flop_per_sec * mfu * days * 24 * 60 * 60)",
     new="return float(num_gpus * flop_per_sec * mfu * days * 3600)")


edit("elementwise_flops_bk_ignores_ops", within="elementwise_flops",
     why="bk: ignores ops_per_element",
     old="return rows * cols * ops_per_element",
     new="return rows * cols")


edit("elementwise_flops_bk_fma", within="elementwise_flops",
     why="bk: 2 FLOPs per element per op (the matmul's multiply-add habit)",
     old="return rows * cols * ops_per_element",
     new="return 2 * rows * cols * ops_per_element")


# Breaking pass 3 (session 5): written from the handout, the stub and the solution only.

edit("bk5_train_saves_final", within="train",
     why="also saves a checkpoint after the last step even when it is not a multiple of checkpoint_every",
     edits=[('raise ValueError(f"num_steps ({num_steps}) and checkpoint_every ({checkpoint_every}) must be >= 0")',
            'raise ValueError("bad arguments")'),
           ("if checkpoint_path is not None and checkpoint_every > 0 and (step + 1) % checkpoint_every == 0:",
            ("if checkpoint_path is not None and checkpoint_every > 0 and ((step + 1) % checkpoint_every == 0\n"
            "                                                                     or step + 1 == num_steps):"))])


edit("bk5_train_path_method", within="train",
     why="checks checkpoint_path.exists(): a str path (allowed) raises AttributeError",
     edits=[('raise ValueError(f"num_steps ({num_steps}) and checkpoint_every ({checkpoint_every}) must be >= 0")',
            'raise ValueError("bad arguments")'),
           ("if checkpoint_path is not None and os.path.exists(checkpoint_path):",
            "if checkpoint_path is not None and checkpoint_path.exists():")])


edit("bk5_train_local_cadence", within="train",
     why="checkpoint cadence counted from this call's first step, (i + 1) % every with i local, iteration "
         "saved right",
     edits=[('raise ValueError(f"num_steps ({num_steps}) and checkpoint_every ({checkpoint_every}) must be >= 0")',
            'raise ValueError("bad arguments")'),
           ("for step in range(start, num_steps):", "for i, step in enumerate(range(start, num_steps)):"),
           ("if checkpoint_path is not None and checkpoint_every > 0 and (step + 1) % checkpoint_every == 0:",
            "if checkpoint_path is not None and checkpoint_every > 0 and (i + 1) % checkpoint_every == 0:")])


edit("bk5_train_zero_steps_raise", within="train",
     why="num_steps = 0 raises (<= 0) instead of returning []",
     old=("if num_steps < 0 or checkpoint_every < 0:\n"
          '        raise ValueError(f"num_steps ({num_steps}) and checkpoint_every ({checkpoint_every}) must be >= 0")'),
     new=("if num_steps <= 0 or checkpoint_every < 0:\n"
          '        raise ValueError("bad arguments")'))


edit("bk5_weight_bytes_finfo", within="weight_bytes",
     why="torch.finfo(dtype).bits // 8: raises for integer and bool dtypes",
     old="return rows * cols * dtype.itemsize",
     new="return rows * cols * (torch.finfo(dtype).bits // 8)")


# Independent breaking pass (session 8): bugs that had full marks, caught by the mixed-precision step's
# dtype, a resume under mixed precision, and checkpoint_every without a path.

edit("bk8_mp_float16", within="train", why="hands mixed_precision_step float16 instead of its bfloat16 default",
     old="loss = mixed_precision_step(model, optimizer, F.mse_loss, x, y)",
     new="loss = mixed_precision_step(model, optimizer, F.mse_loss, x, y, torch.float16)")
edit("bk8_mp_float32", within="train", why="hands mixed_precision_step float32 (CPU autocast then does nothing)",
     old="loss = mixed_precision_step(model, optimizer, F.mse_loss, x, y)",
     new="loss = mixed_precision_step(model, optimizer, F.mse_loss, x, y, dtype=torch.float32)")
edit("bk8_mp_never_checkpoints", within="train", why="the mixed-precision path never saves a checkpoint",
     old="        if checkpoint_path is not None and checkpoint_every > 0",
     new="        if not mixed_precision and checkpoint_path is not None and checkpoint_every > 0")
edit("bk8_save_without_path", within="train", why="saves every checkpoint_every steps even with no checkpoint_path",
     old="if checkpoint_path is not None and checkpoint_every > 0 and (step + 1)",
     new="if checkpoint_every > 0 and (step + 1)")


# -- every default and every case the docstrings name (issue 30) --------------------------------------

@mutant(replaces="train", why="i30: mixed_precision defaults to True: a plain call trains through mixed_precision_step", against="0c2bd5eb92dd")
def i30_train_default_mixed(model, optimizer, get_batch, num_steps, *, checkpoint_path=None, checkpoint_every=0,
                            mixed_precision=True, device="cpu"):
    if num_steps < 0 or checkpoint_every < 0:
        raise ValueError("num_steps and checkpoint_every must be >= 0")
    device = torch.device(device)
    start = 0
    if checkpoint_path is not None and os.path.exists(checkpoint_path):
        start = load_checkpoint(checkpoint_path, model, optimizer)
    losses = []
    for step in range(start, num_steps):
        x, y = get_batch()
        x, y = x.to(device), y.to(device)
        if mixed_precision:
            loss = mixed_precision_step(model, optimizer, F.mse_loss, x, y)
        else:
            optimizer.zero_grad(set_to_none=True)
            loss = F.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
        losses.append(loss.item() if isinstance(loss, torch.Tensor) else float(loss))
        if checkpoint_path is not None and checkpoint_every > 0 and (step + 1) % checkpoint_every == 0:
            save_checkpoint(model, optimizer, step + 1, checkpoint_path)
    return losses


@mutant(replaces="train", why="i30: checkpoint_every defaults to 1: a checkpoint_path alone saves after every step", against="0c2bd5eb92dd")
def i30_train_default_every(model, optimizer, get_batch, num_steps, *, checkpoint_path=None, checkpoint_every=1,
                            mixed_precision=False, device="cpu"):
    if num_steps < 0 or checkpoint_every < 0:
        raise ValueError("num_steps and checkpoint_every must be >= 0")
    device = torch.device(device)
    start = 0
    if checkpoint_path is not None and os.path.exists(checkpoint_path):
        start = load_checkpoint(checkpoint_path, model, optimizer)
    losses = []
    for step in range(start, num_steps):
        x, y = get_batch()
        x, y = x.to(device), y.to(device)
        if mixed_precision:
            loss = mixed_precision_step(model, optimizer, F.mse_loss, x, y)
        else:
            optimizer.zero_grad(set_to_none=True)
            loss = F.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
        losses.append(loss.item() if isinstance(loss, torch.Tensor) else float(loss))
        if checkpoint_path is not None and checkpoint_every > 0 and (step + 1) % checkpoint_every == 0:
            save_checkpoint(model, optimizer, step + 1, checkpoint_path)
    return losses


@mutant(replaces="train", why="i30: device defaults to \"cuda\": a plain call on a CPU model moves the batches to a GPU", against="0c2bd5eb92dd")
def i30_train_default_cuda(model, optimizer, get_batch, num_steps, *, checkpoint_path=None, checkpoint_every=0,
                           mixed_precision=False, device="cuda"):
    if num_steps < 0 or checkpoint_every < 0:
        raise ValueError("num_steps and checkpoint_every must be >= 0")
    device = torch.device(device)
    start = 0
    if checkpoint_path is not None and os.path.exists(checkpoint_path):
        start = load_checkpoint(checkpoint_path, model, optimizer)
    losses = []
    for step in range(start, num_steps):
        x, y = get_batch()
        x, y = x.to(device), y.to(device)
        if mixed_precision:
            loss = mixed_precision_step(model, optimizer, F.mse_loss, x, y)
        else:
            optimizer.zero_grad(set_to_none=True)
            loss = F.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
        losses.append(loss.item() if isinstance(loss, torch.Tensor) else float(loss))
        if checkpoint_path is not None and checkpoint_every > 0 and (step + 1) % checkpoint_every == 0:
            save_checkpoint(model, optimizer, step + 1, checkpoint_path)
    return losses


@mutant(replaces="flops_delivered", why="i30: mfu defaults to 0.5 (a good run), not 1.0 (the peak)", against="f895c62dc0c1")
def i30_delivered_default_half(num_gpus, days, flop_per_sec, mfu=0.5):
    return float(num_gpus * flop_per_sec * mfu * days * 24 * 60 * 60)


@mutant(replaces="elementwise_flops", why="i30: ops_per_element defaults to 2 (a multiply-add), not 1", against="587ca9ae294b")
def i30_elementwise_default_two(rows, cols, ops_per_element=2):
    return rows * cols * ops_per_element


@mutant(replaces="step_mfu", gpu=True, why="i30: num_steps defaults to 5, not 10", against="e0642537c777")
def i30_step_mfu_default_steps(model, optimizer, get_batch, batch, dim, num_layers, num_steps=5, device="cuda"):
    import time

    device = torch.device(device)
    cuda = device.type == "cuda"
    train(model, optimizer, get_batch, 1, device=device)
    if cuda:
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    train(model, optimizer, get_batch, num_steps, device=device)
    if cuda:
        torch.cuda.synchronize(device)
    seconds = (time.perf_counter() - start) / num_steps
    flops = float(step_flops(batch, dim, num_layers)["total"])
    peak = get_promised_flop_per_sec(torch.cuda.get_device_name(device), torch.float32)
    return {"seconds_per_step": seconds, "flops_per_step": flops, "peak": peak, "mfu": mfu(flops, seconds, peak)}
