"""Scale-out on Ray (issue 18): distributed ingest and evaluation, replicated serving. Optional: the ``ray`` extra."""
