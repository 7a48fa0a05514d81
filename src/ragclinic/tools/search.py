"""The `search` tool: the knowledge base's own retrieval (the question's scope and a tenant's key still apply)."""

from __future__ import annotations

DESCRIPTION = ("search: finds passages in the documents. Input: a short query, e.g. \"parcels shipped on "
               "Wednesday\" or \"Support budget 2024\". Output: the best three passages with their numbers [n], "
               "to read numbers from. Use it when the passages and tables shown do not hold a number you need.")
