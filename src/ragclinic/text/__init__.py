"""Text utilities shared by the layers: language detection and the lexical analyzer."""
