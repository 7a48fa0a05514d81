"""Question sets this project writes itself for issue 17's figures (tools, ambiguity, causal)."""
