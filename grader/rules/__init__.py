"""The static rules and the runtime tripwires: what a submission may not use, and how that is checked.

A rule such as "AdamW must not use torch.optim" holds for the program that runs, not for one
`def`:

* `static`   -- the checks graded tests call (`SourceSet`, `build_scope`, forbidden calls and
  imports), reading source with `ast`, never running it;
* `sources`  -- a submission's files as the trusted side reads them: on demand, within a budget;
* `scope`    -- the program a rule covers: the function, everything it reaches by name,
  module-level code, decorators, helpers, imports, in every file of the submission;
* `breaches` -- what no reading of the source can follow (getattr by string, exec, interpreter
  internals): a breach of every rule;
* `monkeypatch` -- code that changes what other code sees at run time, followed through aliases:
  an abstract interpreter over the submission (`monkeypatch_statements`: bindings and writes;
  `monkeypatch_calls`: calls; `monkeypatch_values`: what an expression may be);
* `tripwire` -- the same rules watched at run time: a forbidden callable reached while a probe ran.

May import: the top-level modules below it (`grader.LAYERS`).
"""
