"""The knowledge base learns its own documents (issue 53): questions a user would ask each chunk and its keywords
(questions.py), written by the language model in the background after ingest and filtered by the KB's own
retrieval (run.py), stored beside the chunks (store/learned.py) and used by retrieval (pipeline/retrieve/questions.py)."""
