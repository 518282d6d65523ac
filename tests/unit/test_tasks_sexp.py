"""The S-expression reader, printer and evaluator of the task system (seed 001), as pure code."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.tasks.result import SubtaskRequest, TaskResult, complete, failed
from actors.tasks.sexp.evaluator import EvalLimits, NullWorld, SexpEvaluator
from actors.tasks.sexp.parser import (
    Form,
    Keyword,
    ParseError,
    Symbol,
    is_symbol_text,
    parse,
    parse_program,
    to_source,
)

# -- reading ------------------------------------------------------------------------------------


def test_atoms_read_as_their_kinds():
    assert parse_program('42 -7 +3 1.5 -0.25 1e3 "a b" :path sym system:run_script ok?') == [
        42, -7, 3, 1.5, -0.25, 1000.0, "a b", Keyword("path"), Symbol("sym"),
        Symbol("system:run_script"), Symbol("ok?"),
    ]  # fmt: skip


def test_string_escapes_and_comments():
    text = '; a comment\n("line\\nnext \\"quoted\\" back\\\\slash \\t tab" ; trailing comment\n x)'
    assert parse(text) == ['line\nnext "quoted" back\\slash \t tab', Symbol("x")]


def test_quote_mark_reads_as_quote_form():
    assert parse("'(a b)") == [Symbol("quote"), [Symbol("a"), Symbol("b")]]


def test_lists_know_where_they_start():
    form = parse('(let ((x 1))\n  (call summarize-file :path "a"))')
    inner = form[2]
    assert isinstance(inner, Form) and (inner.line, inner.column) == (2, 3)
    assert (inner[0].line, inner[0].column) == (2, 4)


@pytest.mark.parametrize(
    "text, line, column, words",
    [
        ("(+ 1 2", 1, 1, "never closed: expected ')'"),
        ("(a\n (b c)\n", 1, 1, "never closed"),
        ("(+ 1 2))", 1, 8, "unexpected ')'"),
        ('(str "abc)', 1, 6, "string starting at line 1, column 6 is never closed"),
        ('"a\\qb"', 1, 3, "unknown escape '\\q'"),
        ("(f :)", 1, 4, "keyword name after ':'"),
        ("'", 1, 2, "expression after the quote mark"),
        ("", 1, 1, "expected an expression"),
        ("  ; only a comment\n", 2, 1, "expected an expression"),
    ],
)
def test_parse_errors_say_where_and_what_was_expected(text, line, column, words):
    with pytest.raises(ParseError) as info:
        parse_program(text)
    assert (info.value.line, info.value.column) == (line, column)
    assert words in str(info.value)
    assert str(info.value).startswith(f"line {line}, column {column}: ")


def test_parse_wants_exactly_one_expression():
    with pytest.raises(ParseError, match="expected one expression, found 2"):
        parse("(a) (b)")


# -- printing: print(parse(x)) parses to the same tree -------------------------------------------

_symbol_chars = st.characters(blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp"), blacklist_characters="()\";'")
symbols = st.text(_symbol_chars, min_size=1, max_size=12).filter(is_symbol_text).map(Symbol)
keywords = st.text(_symbol_chars, min_size=1, max_size=10).map(Keyword)
atoms = st.one_of(
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=30),
    symbols,
    keywords,
)
trees = st.recursive(atoms, lambda inner: st.lists(inner, max_size=6), max_leaves=40)


@given(trees)
def test_printing_a_tree_and_reading_it_back_gives_the_same_tree(tree):
    assert parse(to_source(tree)) == tree


@given(trees)
def test_printing_is_stable(tree):
    printed = to_source(tree)
    assert to_source(parse(printed)) == printed


def test_keywords_with_odd_names_round_trip():
    assert parse(to_source(Keyword(":x"))) == Keyword(":x")
    assert parse(to_source([Symbol("a-b"), "é\n\"", -0.0, 10**30])) == [Symbol("a-b"), "é\n\"", -0.0, 10**30]


# -- evaluating -----------------------------------------------------------------------------------


def run(text, world=None, limits=EvalLimits(), **params):
    return SexpEvaluator(world, limits).run(text, params)


def value(text, **params):
    result = run(text, **params)
    assert result.status == "COMPLETE", result.notes
    return result.content


def error(text, world=None, limits=EvalLimits(), **params):
    result = run(text, world, limits, **params)
    assert result.status == "FAILED"
    return result.notes["error"]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("(+ 1 2 3)", 6),
        ("(- 10 4 1)", 5),
        ("(- 3)", -3),
        ("(/ 9 3)", 3),
        ("(/ 1 2)", 0.5),
        ("(* 2 2.5)", 5.0),
        ("(list 1 \"a\" :k)", [1, "a", ":k"]),
        ("(quote (a b))", ["a", "b"]),
        ("'x", "x"),
        ("(if (< 1 2) \"yes\" \"no\")", "yes"),
        ("(if false 1)", None),
        ("(if 0 \"zero is true\" \"no\")", "zero is true"),
        ("(cond ((= 1 2) :a) ((> 3 2) :b) (else :c))", ":b"),
        ("(cond ((= 1 2) 1))", None),
        ("(let ((x 2) (y (* x 10))) (+ x y))", 22),
        ("(do (bind x 5) (bind y (+ x 1)) (list x y))", [5, 6]),
        ("(and 1 2 nil 3)", None),
        ("(or nil false 7)", 7),
        ("(get (dict :a (list 10 20)) :a 1)", 20),
        ("(get (dict :a 1) :missing)", None),
        ("(get (result \"hi\") :content)", "hi"),
        ("(get (fail \"r\" \"m\") :notes :error :reason)", "r"),
        ("(str \"n=\" 3 \" \" :k nil)", "n=3 :k"),
        ("(join (list \"a\" \"b\") \", \")", "a, b"),
        ("(length (list 1 2 3))", 3),
        ("(first (rest (list 1 2 3)))", 2),
        ("(append (list 1) 2 3)", [1, 2, 3]),
        ("(contains? (list 1 2) 2)", True),
        ("(= :a \"a\")", True),
        ("(int \"42\")", 42),
        ("(ok? (result 1))", True),
        ("(ok? (fail \"x\"))", False),
        ("(defined? nope)", False),
        ("(map (lambda (x) (* x x)) (list 1 2 3))", [1, 4, 9]),
        ("(map first (list (list 1 2) (list 3)))", [1, 3]),
    ],
)
def test_expressions_evaluate(text, expected):
    assert value(text) == expected


def test_closures_capture_their_lexical_environment():
    text = """
    (defn adder (n) (lambda (x) (+ x n)))
    (let ((add2 (adder 2)) (n 100))
      (list (add2 1) n))
    """
    assert value(text) == [3, 100]


def test_let_scopes_do_not_leak_and_inner_names_shadow():
    assert value("(let ((x 1)) (let ((x 2)) x))") == 2
    assert error("(do (let ((y 1)) y) y)")["reason"] == "unknown_symbol"


def test_recursion_with_defn():
    assert value("(defn fact (n) (if (<= n 1) 1 (* n (fact (- n 1))))) (fact 10)") == 3628800


def test_loop_and_recur_iterate_without_growing_the_stack():
    text = "(loop ((i 0) (acc 0)) (if (< i 1000) (recur (+ i 1) (+ acc i)) acc))"
    assert value(text) == sum(range(1000))


def test_params_are_variables():
    assert value("(str greeting \", \" name)", greeting="hello", name="world") == "hello, world"


@pytest.mark.parametrize(
    "text, reason, where",
    [
        ("(frob 1)", "unknown_symbol", "line 1, column 2: unknown symbol 'frob'"),
        ("(let ((x 1))\n  (+ x y))", "unknown_symbol", "line 2, column 8: unknown symbol 'y'"),
        ("((lambda (a b) a) 1)", "arity", "takes 2 argument(s) (a b), given 1"),
        ("(defn f (x) x) (f 1 2)", "arity", "f takes 1 argument(s) (x), given 2"),
        ("(not 1 2)", "arity", "not takes 1 argument(s), given 2"),
        ("(if)", "arity", "if expects (if test then [else]), given 0"),
        ("(get_context :query \"q\" :bogus 1)", "arity", "get_context has no :bogus argument"),
        ("(let (x 1) x)", "syntax", "bindings are a list of (name value) pairs"),
        ("(lambda (1) 1)", "syntax", "a parameter must be a symbol"),
        ("(< 1 \"a\")", "type_error", "compares numbers or strings"),
        ("(+ 1 \"a\")", "type_error", "works on numbers"),
        ("(/ 1 0)", "type_error", "division by zero"),
        ("(get 5 :a)", "type_error", "cannot get :a from a number"),
        ("(1 2)", "not_callable", "a number 1 cannot be called"),
        ("(recur 1)", "recur_position", "tail position of a loop"),
        ("(loop ((i 0)) (list (recur 1)))", "recur_position", "tail position"),
        ("(loop ((i 0)) (recur 1 2))", "arity", "recur gives 2 value(s) to a loop of 1 binding(s)"),
        ("(map 1 (list 1))", "not_callable", "cannot be called"),
        ("(call nothing-here :a 1)", "unknown_task", "no atomic task or direct tool named 'nothing-here'"),
    ],
)
def test_mistakes_are_failed_results_that_say_where_and_why(text, reason, where):
    err = error(text)
    assert err["type"] == "sexp_error"
    assert err["reason"] == reason
    assert where in err["message"]


def test_a_parse_error_is_a_failed_result_too():
    err = error('(call summarize-file :path "README.md"')
    assert (err["reason"], err["details"]) == ("parse_error", {"line": 1, "column": 1})


def test_infinite_recursion_ends_at_the_depth_limit():
    err = error("(defn f (x) (f x)) (f 1)")
    assert err["reason"] == "depth_limit" and "line 1, column 13" in err["message"]


def test_an_endless_loop_ends_at_the_step_limit():
    err = error("(loop ((i 0)) (recur (+ i 1)))", limits=EvalLimits(max_steps=500))
    assert err["reason"] == "step_limit" and "more than 500 steps" in err["message"]


def test_mutual_recursion_deeper_than_the_limit_fails_cleanly():
    text = "(defn ping (n) (if (= n 0) 0 (pong (- n 1)))) (defn pong (n) (ping n)) (ping 10000)"
    assert error(text, limits=EvalLimits(max_steps=1_000_000))["reason"] == "depth_limit"


# -- the world: tasks, tools, context, CONTINUATION ------------------------------------------------


class FakeWorld(NullWorld):
    """Tasks and tools answered from tables; records what was asked."""

    def __init__(self, tasks=None, tools=None, context=None):
        self.tasks = tasks or {}
        self.tools = tools or {}
        self.context = context or []
        self.calls: list[tuple[str, object, str]] = []
        self.steps: list[tuple[int, int, str]] = []

    def on_step(self, step, depth, form, line, column):
        self.steps.append((step, depth, form))

    def has_task(self, name):
        return name in self.tasks

    def call_task(self, request: SubtaskRequest, reason: str) -> TaskResult:
        self.calls.append((request.name, request, reason))
        answer = self.tasks[request.name]
        return answer(request) if callable(answer) else answer

    def has_tool(self, name):
        return name in self.tools

    def call_tool(self, name, args):
        self.calls.append((name, args, "tool"))
        return self.tools[name]

    def get_context(self, query, max_results, inherited_context, disable_context):
        self.calls.append(("get_context", (query, max_results, inherited_context, disable_context), "context"))
        return complete(self.context[:max_results])


def test_call_and_head_position_both_run_atomic_tasks_with_keyword_params():
    world = FakeWorld(tasks={"summarize-file": complete("a summary")})
    assert run('(call summarize-file :path "README.md")', world).content == "a summary"
    assert run('(summarize-file :path "README.md")', world).content == "a summary"
    requests = [c[1] for c in world.calls]
    assert all(r.params == {"path": "README.md"} for r in requests)


def test_the_issue_example_falls_back_to_a_script_when_the_task_fails():
    world = FakeWorld(
        tasks={"summarize-file": failed("llm_error", "timeout", "no answer")},
        tools={"system:run_script": complete("README.md\n")},
    )
    text = '(let ((plan (call summarize-file :path "README.md"))) (if (ok? plan) plan (system:run_script "ls")))'
    assert run(text, world).content == "README.md\n"
    assert world.calls[-1] == ("system:run_script", {"command": "ls"}, "tool")


def test_context_keywords_go_to_the_request_not_the_params():
    world = FakeWorld(tasks={"t": complete("ok")})
    run('(call t :x 1 :inherited-context "earlier" :disable-context true)', world)
    request = world.calls[0][1]
    assert (request.params, request.inherited_context, request.disable_context) == ({"x": 1}, "earlier", True)


def test_tasks_take_keyword_arguments_only():
    world = FakeWorld(tasks={"t": complete("ok")})
    assert error('(t "positional")', world)["reason"] == "arity"
    assert error("(t :x)", world)["message"].endswith("the keyword :x has no value after it")


def test_get_context_returns_paths_and_passes_the_flags():
    world = FakeWorld(context=["a.py", "b.py", "c.py"])
    assert run('(get_context :query "replay" :max-results 2 :disable-context true)', world).content == ["a.py", "b.py"]
    assert world.calls[0][1] == ("replay", 2, None, True)


def test_read_files_flattens_lists_of_paths():
    world = FakeWorld(tools={"system:read_files": complete({"a": "x"})})
    run('(system:read_files (list "a" "b") "c")', world)
    assert world.calls[0][1] == {"paths": ["a", "b", "c"]}


def test_a_continuation_spawns_its_subtask_through_the_task_system():
    draft = TaskResult(
        status="CONTINUATION",
        content="draft 1",
        notes={"subtask_request": {"name": "evaluator", "params": {"draft": "draft 1"}}},
    )
    world = FakeWorld(tasks={"director": draft, "evaluator": lambda r: complete(f"judged {r.params['draft']}")})
    result = run("(call director :goal \"g\")", world)
    assert result.content == "judged draft 1"
    assert result.notes["continued_via"] == ["evaluator"]
    assert [(name, reason) for name, _, reason in world.calls] == [("director", "call"), ("evaluator", "continuation")]


def test_continuations_are_bounded():
    loop = TaskResult(status="CONTINUATION", notes={"subtask_request": {"name": "again", "params": {}}})
    world = FakeWorld(tasks={"again": loop})
    result = run("(again)", world, EvalLimits(max_continuations=3))
    assert result.status == "FAILED" and result.notes["error"]["reason"] == "continuations"
    assert len(world.calls) == 4


def test_a_continuation_without_a_request_fails():
    world = FakeWorld(tasks={"odd": TaskResult(status="CONTINUATION", notes={})})
    assert run("(odd)", world).notes["error"]["reason"] == "bad_continuation"


def test_every_compound_form_is_a_step_with_its_depth():
    world = FakeWorld()
    run("(let ((x (+ 1 2))) (list x))", world)
    assert world.steps == [(1, 1, "(let ((x (+ 1 2))) (list x))"), (2, 2, "(+ 1 2)"), (3, 2, "(list x)")]


def test_a_bound_name_shadows_a_task_of_the_same_name():
    world = FakeWorld(tasks={"f": complete("task")})
    assert run("(defn f () \"local\") (f)", world).content == "local"
    assert world.calls == []
