"""``subextract serve``: an HTTP service with a persistent job queue, a live cue stream and a
proofreading page (README, "Service").

Modules: ``store`` (jobs and cues in SQLite), ``worker`` (threads that run queued jobs),
``upload`` (multipart bodies streamed to disk under a size limit), ``app`` (the Starlette routes),
``metrics`` (Prometheus), ``crops`` (the OCR picture beside each cue), ``main`` (the command).
"""
