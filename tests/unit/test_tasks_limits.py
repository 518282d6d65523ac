"""Issue #17, "Bounded and confined", for task workflows: every workflow ends (step, time, number
and size limits), the parser and evaluator answer every input with their own error, tool calls
time out, and bad input is refused before anything is written."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from actors.runtime.llm.gateway import LlmGateway
from actors.testing.model import ScriptedProvider
from actors.runtime.perform import LiveEffects, local_invoker
from actors.runtime.replay import replay_run
from actors.runtime.shell import ActorShell
from actors.tasks.result import TaskResult
from actors.tasks.runner import prepare, serve, submit, timed_invoker
from actors.tasks.sexp.evaluator import EvalLimits, SexpEvaluator, plain
from actors.tasks.sexp.parser import (
    MAX_NESTING,
    Keyword,
    ParseError,
    Symbol,
    parse,
    parse_program,
    to_source,
)
from actors.tasks.sexp.primitives import (
    _append,
    _rest,
    make_list,
    measure,
    pure_primitives,
)
from actors.tasks.workflow import WorkflowBehaviour, execute_workflow, task_stream
from events.store import EventStore


def run(text, limits=EvalLimits(), **params):
    return SexpEvaluator(None, limits).run(text, params)


def reason(text, limits=EvalLimits(), **params):
    result = run(text, limits, **params)
    assert result.status == "FAILED", result
    assert result.error.type == "sexp_error", result.error
    return result.error.reason


# -- limits on what a workflow makes ------------------------------------------------------------


def test_squaring_forty_times_is_refused_at_the_integer_limit_not_left_to_run():
    # 2**(2**40): far within the step limit, but the numbers grow without end.
    text = "(loop ((x 2) (i 0)) (if (< i 40) (recur (* x x) (+ i 1)) x))"
    result = run(text)
    assert result.error.reason == "number_limit"
    assert "more than 8192 bits" in result.error.message and "line 1, column 41" in result.error.message
    assert reason(text, EvalLimits(max_int_bits=64)) == "number_limit"


def test_doubling_a_string_is_refused_at_the_size_limit_not_a_memory_error():
    text = '(loop ((s "ab") (i 0)) (if (< i 64) (recur (str s s) (+ i 1)) (length s)))'
    assert reason(text) == "size_limit"
    assert reason('(join (list (str "abc" "def") "x") "")', EvalLimits(max_size=5)) == "size_limit"


def test_a_list_of_shared_parts_is_measured_as_it_would_print():
    # 2**60 leaves sharing 60 lists: printing it (or comparing, or recording it) would never end.
    assert reason("(loop ((l (list 1)) (i 0)) (if (< i 60) (recur (list l l) (+ i 1)) l))") == "size_limit"
    assert reason("(loop ((l (list 1)) (i 0)) (if (< i 500) (recur (list l) (+ i 1)) l))") == "size_limit"
    assert reason("(loop ((d (dict :a 1)) (i 0)) (if (< i 60) (recur (dict :a d :b d) (+ i 1)) d))") == "size_limit"
    assert run("(list (list 1 2) (dict :a (list 3)))").content == [[1, 2], {"a": [3]}]


def test_floats_that_overflow_are_refused():
    assert reason("(* 1e308 10)") == "number_limit"
    assert reason("(/ (* 99999999999999999999 99999999999999999999 99999999999999999999 99999999999999999999"
                  " 99999999999999999999 99999999999999999999 99999999999999999999 99999999999999999999"
                  " 99999999999999999999 99999999999999999999 99999999999999999999 99999999999999999999"
                  " 99999999999999999999 99999999999999999999 99999999999999999999 99999999999999999999) 7)") == "number_limit"  # fmt: skip
    assert run("(/ (* 99999999999999999999 99999999999999999999) 99999999999999999999)").content == 99999999999999999999


def test_parameters_are_held_to_the_same_limits():
    assert reason("x", x=2**9000) == "number_limit"
    assert reason("x", x="a" * 2_000_000) == "size_limit"


def test_limits_are_positive_and_integers_stay_printable():
    with pytest.raises(ValueError, match="max_int_bits must be at most"):
        EvalLimits(max_int_bits=20_000)
    with pytest.raises(ValueError, match="max_seconds must be a positive integer"):
        EvalLimits(max_seconds=0)


# -- the wall-time limit ------------------------------------------------------------------------


def test_the_wall_time_limit_ends_an_evaluation():
    clock = iter(range(0, 10**6, 7))  # seconds: 7 more every time the clock is read
    evaluator = SexpEvaluator(None, EvalLimits(max_seconds=30), elapsed=lambda: next(clock))
    result = evaluator.run("(loop ((i 0)) (if (< i 1000) (recur (+ i 1)) i))")
    assert result.error.reason == "time_limit" and "longer than 30 s" in result.error.message
    assert result.error.details["step"] == 300  # read at steps 50, 100, ... 300: 0, 7, 14, 21, 28, 35 > 30


def _recorded_run(store, text, limits, seconds_per_event):
    """A live run whose events are stamped `seconds_per_event` apart (a slow machine)."""
    start = prepare(text, workspace=".", limits=limits)
    submit(store, "w1", start)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)

    def clock(version):
        return t0 + timedelta(seconds=seconds_per_event * version)

    shell = ActorShell(WorkflowBehaviour(), task_stream("w1"), store, run_id="w1", clock=clock).load()
    shell.handle(start)
    return execute_workflow(shell, LiveEffects(LlmGateway(ScriptedProvider(["(no reply scripted)"])), local_invoker({})))


def test_a_run_stopped_by_the_wall_time_limit_replays_to_the_same_stop_however_fast():
    store = EventStore("memory://")
    text = "(loop ((i 0)) (if (< i 1000) (recur (+ i 1)) i))"
    result = _recorded_run(store, text, {"max_seconds": 60}, seconds_per_event=1)
    assert result.error.reason == "time_limit" and result.error.details["step"] == 100
    report = replay_run(store, "w1")  # takes milliseconds: the recorded clock decides, not the real one
    assert report.ok, report.divergence.describe()
    finished = store.read_stream(task_stream("w1"))[-1]
    assert finished.type_name == "WorkflowFinished" and finished.notes["error"]["reason"] == "time_limit"


def test_a_run_within_the_wall_time_limit_replays_too():
    store = EventStore("memory://")
    result = _recorded_run(store, "(loop ((i 0)) (if (< i 100) (recur (+ i 1)) i))", {}, seconds_per_event=0.001)
    assert result.content == 100
    assert replay_run(store, "w1").ok


# -- tool calls time out ------------------------------------------------------------------------


class Hangs:
    def __init__(self):
        self.release = threading.Event()

    def execute(self, **args):
        self.release.wait(120)  # released by the test; bounded so no thread outlives the session long
        return "late"


@pytest.mark.timeout(60)  # without the tool timeout, this workflow would hang
def test_a_tool_call_that_hangs_is_a_failed_tool_result_not_a_hung_workflow():
    store = EventStore("memory://")
    start = prepare('(system:read_files "a.txt")', workspace=".")
    submit(store, "w1", start)
    hangs = Hangs()
    try:
        result = serve(store, "w1", start, ScriptedProvider(["(no reply scripted)"]), tools={"system:read_files": hangs}, tool_timeout_s=0.05)
    finally:
        hangs.release.set()
    assert result.status == "FAILED"
    returned = [e for e in store.read_stream(task_stream("w1")) if e.type_name == "ToolReturned"]
    assert len(returned) == 1 and not returned[0].ok
    assert returned[0].error.reason == "ToolTimeout" and "no result within 0.05 s" in returned[0].output
    assert replay_run(store, "w1").ok  # the timeout is recorded like any tool result


def test_the_tool_timeout_passes_results_and_errors_through_and_leaves_run_script_to_its_own():
    class Fails:
        def execute(self, **args):
            raise ValueError("no such file")

    hangs = Hangs()
    invoke = timed_invoker(local_invoker({"ok": type("Ok", (), {"execute": lambda self, **a: "fine"})(), "bad": Fails(),
                                          "system:run_script": hangs}), 5)  # fmt: skip
    assert invoke("ok", {}) == "fine"
    with pytest.raises(ValueError, match="no such file"):
        invoke("bad", {})
    worker = threading.Thread(target=invoke, args=("system:run_script", {}), daemon=True)
    worker.start()
    worker.join(0.2)
    assert worker.is_alive()  # not cut off by the outer timeout: run_script times out itself
    hangs.release.set()


# -- bad input is refused before anything is written ---------------------------------------------


def test_an_unknown_task_name_is_refused_listing_the_known_ones():
    with pytest.raises(ValueError, match=r"no atomic task or direct tool named 'no-such-task'.*summarize-file.*system:run_script"):
        prepare("no-such-task", workspace=".")
    assert prepare("system:run_script", workspace=".").kind == "task"


def test_limits_out_of_range_are_refused_before_anything_is_written():
    with pytest.raises(ValueError, match="max_int_bits must be at most"):
        prepare("(+ 1 2)", workspace=".", limits={"max_int_bits": 100_000})
    with pytest.raises(ValueError, match="max_seconds must be a positive integer"):
        prepare("(+ 1 2)", workspace=".", limits={"max_seconds": True})


@pytest.mark.parametrize("n", [5_000, 10_000])
def test_over_deep_nesting_is_a_parse_error_that_says_where(n):
    with pytest.raises(ParseError, match=rf"line 1, column {MAX_NESTING + 1}: expressions nested deeper than"):
        parse("(" * n + ")" * n)
    with pytest.raises(ParseError, match="nested deeper"):
        prepare("(" * n, workspace=".")
    with pytest.raises(ParseError, match="nested deeper"):
        parse("'" * n + "x")
    assert run("(" * n).error.reason == "parse_error"


def test_nesting_up_to_the_limit_reads():
    assert parse("(" * MAX_NESTING + ")" * MAX_NESTING) is not None


@pytest.mark.parametrize("text", ["1e309", "-1e400", "(f 1.5e999)", "9" * 4001, "(+ -" + "9" * 4500 + ")"])
def test_numbers_that_would_not_print_back_are_parse_errors(text):
    with pytest.raises(ParseError, match="too large|more than 4000 digits"):
        parse(text)


def test_the_largest_finite_floats_round_trip():
    for x in (1.7976931348623157e308, -1e308, 5e-324):
        assert parse(to_source(x)) == x


# -- fuzzing: every input evaluates or is the evaluator's own error ------------------------------

WORDS = [
    "(", "(", "(", ")", ")", ")", "'", "list", "dict", "get", "contains?", "int", "str", "join", "*", "+", "-", "/",
    "<", "=", "length", "first", "rest", "nth", "append", "map", "lambda", "loop", "recur", "let", "if", "do", "cond",
    "else", "and", "or", "bind", "quote", "defn", "f", "x", "i", "nil", "true", ":a", ":b", '"s"', '"12"', '"1.5e400"',
    "0", "1", "-1", "2.5", "1e308", "99999999999999999999", "9" * 1300, "result", "fail", "ok?", "failed?", "not",
    "get_context", ":query", ":max-results", "system:read_files", "system:run_script", "call", "defined?",
]  # fmt: skip
programs = st.lists(st.sampled_from(WORDS), min_size=1, max_size=40).map(" ".join)
FUZZ_LIMITS = EvalLimits(max_steps=400, max_size=20_000, max_int_bits=2048)


def _holds(result):
    assert isinstance(result, TaskResult)
    json.dumps(plain(result.model_dump()), allow_nan=False)  # what the log would record
    if result.status == "FAILED":
        assert result.error is not None


@settings(max_examples=300, deadline=None)
@given(programs)
@example("(contains? (dict :a 1) (list 1))")
@example("(get (dict :a 1) (list 1))")
@example("(int 1e309)")
@example("(int 1e308)")
@example('(int "1.5e400")')
@example('(int "' + "9" * 5000 + '")')
@example("(* " + " ".join(["9" * 1300] * 4) + ")")
@example("(/ " + "9" * 1300 + " 7)")
@example("(* 1.5 " + "9" * 1300 + ")")
@example("(" * 10_000)
@example("'" * 5_000 + "x")
@example("(loop ((x 2) (i 0)) (if (< i 40) (recur (* x x) (+ i 1)) x))")
@example('(loop ((s "ab") (i 0)) (if (< i 64) (recur (str s s) (+ i 1)) s))')
@example("(loop ((l (list 1)) (i 0)) (if (< i 60) (recur (list l l) (+ i 1)) (str l)))")
@example('(get_context :query "x" :max-results "a")')
@example("(nth (list 1 2) 99999999999999999999)")
@example("(- 1e308 -1e308)")
def test_any_program_evaluates_or_fails_with_the_evaluators_own_error(text):
    _holds(SexpEvaluator(None, FUZZ_LIMITS).run(text))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
@example("1e309")
@example("(" * 10_000)
def test_any_text_parses_or_is_a_parse_error_and_what_parses_prints_back(text):
    try:
        forms = parse_program(text)
    except ParseError:
        return
    assert parse_program(" ".join(to_source(f) for f in forms)) == forms
    _holds(SexpEvaluator(None, FUZZ_LIMITS).run(text))


HEADS = [*sorted(pure_primitives()), "get_context", "system:read_files", "system:run_script", "map", "if", "let",
         "do", "and", "or", "quote", "call", "defined?", "lambda", "loop", "recur", "bind", "cond", "defn"]  # fmt: skip
ATOMS = st.one_of(
    st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=5),
    st.sampled_from([Keyword("a"), Keyword("query"), Keyword("max-results"), Symbol("x"), Symbol("nil")]),
)
FORMS = st.recursive(
    ATOMS,
    lambda inner: st.builds(lambda h, args: [Symbol(h), *args], st.sampled_from(HEADS), st.lists(inner, max_size=4)),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(FORMS)
def test_any_well_formed_call_evaluates_or_fails_with_the_evaluators_own_error(form):
    text = f'(let ((x (list 1 "a" (dict :a 2)))) {to_source(form)})'
    _holds(SexpEvaluator(None, FUZZ_LIMITS).run(text))


# -- sizes are kept, not recounted ---------------------------------------------------------------

VALUES = st.recursive(
    st.one_of(st.integers(), st.text(max_size=8), st.none(), st.booleans(), st.floats(allow_nan=False)),
    lambda inner: st.lists(inner, max_size=4),
    max_leaves=20,
)


@given(st.lists(VALUES, max_size=6), st.lists(st.lists(VALUES, max_size=3), max_size=6), st.integers(0, 8))
def test_lists_made_by_append_and_rest_know_their_size_as_a_fresh_count_would(start, appends, rests):
    xs = make_list(start)
    for items in appends:
        xs = _append(xs, *items)
        assert (xs.size, xs.nesting) == measure(list(xs))
    for _ in range(rests):
        xs = _rest(xs)
        size, nesting = measure(list(xs))
        assert xs.size == size and xs.nesting >= nesting  # nesting: an upper bound after rest


def test_tool_arguments_are_recorded_as_plain_data():
    store = EventStore("memory://")
    start = prepare('(system:run_script :command "true" :timeout :soon)', workspace=".")
    submit(store, "w1", start)
    result = serve(store, "w1", start, ScriptedProvider(["(no reply scripted)"]))
    called = [e for e in store.read_stream(task_stream("w1")) if e.type_name == "ToolCalled"]
    assert called[0].args == {"command": "true", "timeout": ":soon"}
    assert result.status == "FAILED" and "timeout" in result.error.message
