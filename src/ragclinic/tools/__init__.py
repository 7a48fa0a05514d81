"""Tools the planner may call (issue 17): ``calculator`` (safe arithmetic), with ``sql`` over the tables found at
ingest and ``search`` (the retrieval) to come. Each has a description written for the model."""
