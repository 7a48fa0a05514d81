"""The trace page's diagnose panel: which layer broke the answer (the debugger, as `ragclinic diagnose`), and with
"apply the fix" the fix carried out on a copy and the question re-asked (debugger/apply.py; keeping a fix is for
the command line, which holds the knowledge base alone). Keys without a tenant: the probes read every document."""

from __future__ import annotations

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse

from ragclinic.server.api import applying
from ragclinic.server.deps import state
from ragclinic.server.errors import ApiError
from ragclinic.server.ui import templates, who

router = APIRouter(include_in_schema=False)


@router.post("/ui/diagnose")
def diagnose_fragment(request: Request, trace_id: str = Form(...), expected: str = Form(""),
                      gold_doc: str = Form(""), expect_refusal: str = Form(""), apply: str = Form("")):
    caller = who(request)
    if caller.tenant:
        raise ApiError(403, "forbidden", "diagnose reads the whole knowledge base: it needs a key without a tenant")
    if not (expected.strip() or gold_doc.strip() or expect_refusal):
        return HTMLResponse('<p class="warn small">say what is right: the answer, the document, or "should refuse"</p>')
    with applying(bool(apply)), state(request).pool.reader() as clinic:
        d = clinic.diagnose(None, expected.strip() or None, trace_id, gold_doc.strip() or None,
                            expect_refusal=bool(expect_refusal), apply=bool(apply), rebuild=False)
    return templates.TemplateResponse(request, "_diagnosis.html", {"d": d})
