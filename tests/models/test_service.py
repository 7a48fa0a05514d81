"""The model service: a worker process behind the LanguageModel role, replaced after a crash.

These run the scripted fake inside a real worker process (``python -m ragclinic.models.worker``), so the
process handling — queueing, streaming, signals, restarts, time-outs — is the real one; the real-model
identity test is in test_service_local.py."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from ragclinic.errors import ModelCrashed, ModelError
from ragclinic.models.fake_llm import PacedLanguageModel
from ragclinic.models.llm import LanguageModel, Message
from ragclinic.models.process import describe_exit
from ragclinic.models.service import ModelService, ServiceModel

MSGS = [Message("system", "Reply briefly."), Message("user", "Is Paris the capital of France?")]
REPLY = "Yes, Paris is the capital of France."


def service(**options) -> ModelService:
    return ModelService("fake", {}, options={"replies": [REPLY], **options}, label="the fake model")


@pytest.fixture
def svc():
    s = service()
    yield s
    s.close()


def test_results_are_identical_to_the_in_process_model(svc):
    remote, local = ServiceModel(svc), PacedLanguageModel([REPLY])
    assert isinstance(remote, LanguageModel)
    pieces: list[str] = []
    got = remote.chat(MSGS, max_tokens=32, on_token=pieces.append)
    assert got == local.chat(MSGS, max_tokens=32)
    assert "".join(pieces) == got.text == REPLY
    assert remote.next_token_probs(MSGS, ["yes", "no"]) == local.next_token_probs(MSGS, ["yes", "no"])
    assert remote.count_tokens("three little words") == 3
    assert svc.starts == 1 and remote.model_id == "fake-paced"


def test_token_log_probabilities_cross_the_process_boundary():
    svc = service(token_probs={"Paris": 0.25})
    try:
        remote = ServiceModel(svc).chat(MSGS, max_tokens=32, logprobs=True)
        local = PacedLanguageModel([REPLY], token_probs={"Paris": 0.25}).chat(MSGS, max_tokens=32, logprobs=True)
        assert remote.text == local.text and len(remote.logprobs) == len(local.logprobs) == 7
        assert [at for at, _ in remote.logprobs] == [at for at, _ in local.logprobs]
        assert [lp for _, lp in remote.logprobs] == pytest.approx([lp for _, lp in local.logprobs], abs=1e-5)
        assert not ServiceModel(svc).chat(MSGS, max_tokens=32).logprobs  # only when asked
    finally:
        svc.close()


def test_the_model_is_loaded_once_and_requests_are_queued(svc):
    lm = ServiceModel(svc)
    results, errors = [], []

    def ask():
        try:
            results.append(lm.chat(MSGS, max_tokens=32).text)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=ask) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors and results == [REPLY] * 6
    assert svc.starts == 1


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT])
def test_a_worker_killed_mid_call_raises_model_crashed_and_the_next_call_gets_a_fresh_worker(sig):
    svc = service(token_seconds=0.05)
    try:
        lm = ServiceModel(svc)
        first = svc.pid
        pieces: list[str] = []

        def kill_on_first_token(piece: str) -> None:
            pieces.append(piece)
            if len(pieces) == 1:
                os.kill(first, sig)

        with pytest.raises(ModelCrashed) as e:
            lm.chat(MSGS, max_tokens=64, on_token=kill_on_first_token)
        assert e.value.reason.startswith("the fake model crashed: " + sig.name)
        assert svc.pid is None and svc.crashes == [e.value.reason]
        assert lm.chat(MSGS, max_tokens=64).text == REPLY  # a new worker
        assert svc.starts == 2 and svc.pid not in (None, first)
    finally:
        svc.close()


def test_a_call_interrupted_by_its_caller_replaces_the_worker_so_no_stale_reply_is_read():
    svc = service(token_seconds=0.01)
    try:
        lm = ServiceModel(svc)

        def fail(_piece: str) -> None:
            raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            lm.chat(MSGS, max_tokens=64, on_token=fail)
        assert lm.count_tokens("one two") == 2  # not the rest of the interrupted reply
        assert lm.chat(MSGS, max_tokens=64).text == REPLY and svc.starts == 2
    finally:
        svc.close()


def test_text_that_is_not_valid_unicode_is_carried_not_a_crash(svc):
    lm = ServiceModel(svc)
    assert lm.count_tokens("broken \udce9 surrogate") == 3 and svc.starts == 1


def test_a_python_error_in_the_worker_is_a_model_error_and_the_worker_lives_on(svc):
    svc.start()
    pid = svc.pid
    with pytest.raises(ModelError) as e:
        svc.call({"op": "no-such-op"})
    assert not isinstance(e.value, ModelCrashed) and "no-such-op" in str(e.value)
    assert svc.pid == pid and svc.starts == 1


def test_a_hung_worker_is_killed_after_the_timeout_and_replaced():
    svc = ModelService("fake", {}, options={"replies": ["one two three four five six"], "token_seconds": 1.0},
                       timeout=0.5, label="the fake model")
    try:
        lm = ServiceModel(svc)
        with pytest.raises(ModelCrashed, match="no reply within llm_call_timeout"):
            lm.chat(MSGS, max_tokens=16)
        assert svc.pid is None
        assert lm.count_tokens("a b") == 2 and svc.starts == 2
    finally:
        svc.close()


def test_a_worker_that_cannot_load_is_a_model_error_not_a_crash_and_leaves_no_worker():
    svc = ModelService("no-such-backend", {}, label="the test model")
    with pytest.raises(ModelError, match="no backend 'no-such-backend'"):
        svc.start()
    assert svc.pid is None  # no half-started worker answers "no model is loaded" to the next call
    svc.name = "fake"  # the cause fixed: the next call starts a worker that loads
    assert svc.call({"op": "count", "text": "a b c"}) == 3 and svc.starts == 2
    svc.close()


def test_describe_exit_names_signals_and_codes():
    assert describe_exit(-signal.SIGSEGV) == "SIGSEGV"
    assert describe_exit(-signal.SIGKILL).startswith("SIGKILL (killed: out of memory")
    assert describe_exit(3) == "exit code 3"


# ---------------------------------------------------------------------------------------------- the contract
# What code sharing a model service may rely on, for the real service (a worker process) and its in-process
# fake alike.
def _real(**options):
    return service(token_seconds=0.02, **options)


def _fake(**options):
    from ragclinic.models.fake_service import FakeModelService

    return FakeModelService("fake", {}, options={"replies": [REPLY], **options}, label="the fake model")


def _crashing_chat(svc, lm, sig: str = "SIGSEGV"):
    """A chat during which the service dies: the worker is signalled at the first token (the fake is told to)."""
    if hasattr(svc, "crash_next"):
        svc.crash_next(sig)
        return lm.chat(MSGS, max_tokens=32)
    pid = svc.pid
    return lm.chat(MSGS, max_tokens=32, on_token=lambda _p: os.kill(pid, getattr(signal, sig)))


@pytest.fixture(params=[_real, _fake], ids=["worker-process", "in-process-fake"])
def any_service(request):
    svc = request.param()
    yield svc
    svc.close()


def test_contract_start_reports_the_model_and_calls_answer_with_the_models_results(any_service):
    info = any_service.start()
    assert info["model_id"] == "fake-paced" and any_service.starts == 1 and any_service.pid is not None
    lm = ServiceModel(any_service)
    pieces: list[str] = []
    assert lm.chat(MSGS, max_tokens=32, on_token=pieces.append) == PacedLanguageModel([REPLY]).chat(MSGS, max_tokens=32)
    assert "".join(pieces) == REPLY
    assert lm.next_token_probs(MSGS, ["yes", "no"]) == {"yes": 0.5, "no": 0.5}


def test_contract_a_crash_raises_model_crashed_and_the_next_call_starts_afresh(any_service):
    lm = ServiceModel(any_service)
    with pytest.raises(ModelCrashed, match="the fake model crashed: SIGSEGV"):
        _crashing_chat(any_service, lm, "SIGSEGV")
    assert any_service.pid is None and len(any_service.crashes) == 1
    assert lm.count_tokens("a b") == 2 and any_service.starts == 2


def test_contract_a_bad_request_is_a_model_error_and_the_service_lives_on(any_service):
    any_service.start()
    with pytest.raises(ModelError) as e:
        any_service.call({"op": "no-such-op"})
    assert not isinstance(e.value, ModelCrashed)
    assert any_service.call({"op": "count", "text": "x"}) == 1 and any_service.starts == 1


def test_a_deferred_start_loads_while_the_caller_goes_on_and_the_first_call_waits_for_it():
    """`ragclinic ask` retrieves while the model loads: the worker starts on a thread, the first call queues."""
    svc = service(replies=["ok"])
    try:
        lm = ServiceModel(svc, model_id="fake-scripted")
        assert lm.model_id == "fake-scripted"  # known without waiting for the worker
        assert lm.chat(MSGS, max_tokens=8).text == "ok" and svc.starts == 1
    finally:
        svc.close()


def test_a_deferred_start_that_fails_is_a_crash_at_the_first_call_so_the_question_is_answered_without_it():
    svc = ModelService("no-such-backend", {}, label="the test model")
    lm = ServiceModel(svc, model_id="local:0123")
    with pytest.raises(ModelCrashed, match="no backend 'no-such-backend'"):
        lm.chat(MSGS, max_tokens=8)
    assert svc.pid is None
    svc.close()
    # without a model id the start is waited for, and its failure is the ModelError it always was
    with pytest.raises(ModelError, match="no backend"):
        ServiceModel(ModelService("no-such-backend", {}, label="the test model"))


def test_a_deferred_start_that_failed_is_not_tried_again_for_every_call():
    svc = ModelService("no-such-backend", {}, label="the test model")
    lm = ServiceModel(svc, model_id="local:0123")
    with pytest.raises(ModelCrashed):
        lm.chat(MSGS, max_tokens=8)
    starts = svc.starts
    with pytest.raises(ModelCrashed, match="no backend"):
        lm.next_token_probs(MSGS, ["yes", "no"])
    assert svc.starts == starts  # failed at once, no new worker
    with pytest.raises(ModelError, match="no backend"):
        ServiceModel(ModelService("no-such-backend", {}, label="m"), model_id="x").wait_started()
    svc.close()


@pytest.mark.parametrize("stream", [True, False])
def test_a_withdrawn_call_stops_at_the_next_token_and_the_worker_lives_on(stream):
    """Issue 51 (3): a server's client that left had its model call run to the end. The request's cancel event
    (ragclinic/cancel.py) set mid-reply makes the worker stop at its next token (SIGUSR1) and reply Withdrawn:
    the call ends within a token or two, and the same worker (the model still loaded) answers the next call."""
    from ragclinic import cancel

    words = " ".join(f"w{i}" for i in range(200))
    svc = ModelService("fake", {}, options={"replies": [words], "token_seconds": 0.05}, label="the fake model")
    try:
        lm = ServiceModel(svc)
        lm.count_tokens("warm up")
        pid, gone, pieces, out = svc.pid, threading.Event(), [], {}

        def call():
            cancel.CURRENT.set(gone)
            t0 = time.monotonic()
            try:
                lm.chat(MSGS, max_tokens=300, on_token=pieces.append if stream else None)
            except cancel.Withdrawn as e:
                out["error"] = e
            out["seconds"] = time.monotonic() - t0

        t = threading.Thread(target=call)
        t.start()
        time.sleep(0.6)
        gone.set()
        t.join(10)
        assert isinstance(out.get("error"), cancel.Withdrawn), out
        assert out["seconds"] < 2.0, out  # 200 tokens at 0.05 s: 10 s had it run to the end
        assert len(pieces) < 40
        assert svc.pid == pid and svc.starts == 1  # not killed: in step, the model loaded
        assert lm.chat(MSGS, max_tokens=3).text == "w0 w1 w2"
    finally:
        svc.close()
