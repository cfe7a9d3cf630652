"""Scale-out: ``subextract batch --ray`` runs a batch on a Ray cluster through Ray Data
(``ray_runner``), with the same inputs, outputs, manifest, resume and failure isolation as the
threads of ``subextract.batch``. Ray is the optional extra ``ray`` (from a clone: ``pip install '.[ray]'``);
nothing here is imported unless ``--ray`` is given. ``batch --shard I/N`` (in ``subextract.batch``) splits a batch
between processes without Ray (Kubernetes Indexed Jobs, Slurm arrays). See docs/scale.md.
"""
