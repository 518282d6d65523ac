"""Grounded answers and the verify step (actors/agent/evidence.py, actors/agent/verify.py): pure checks of an answer's
quote against what the tools showed, and of the quote against what the question asks."""

from __future__ import annotations

import pytest

from actors.agent.asks import ask_of
from actors.agent.evidence import (
    NOT_FOUND,
    Citation,
    Grounded,
    citation,
    ground,
    in_prose,
    override_owner,
    shown_lines,
    spans,
)
from actors.agent.patches import GROUNDED_PATCHES
from actors.agent.mismatch import mismatch
from actors.agent.verify import check_answer, lookup_name
from tests.support.patch_sets import grounded_without

READ = """pkg/config.py, lines 10-14 of 40:
10: class Settings(BaseSettings):
11:     timeout = 30
12:     retries: int = 5
13:     def check(self):
14:         raise ValueError("timeout must be positive")
(showing lines 10-14 of 40; to continue read start_line=15)"""
SEARCH = """2 files match 'settings':
pkg/config.py (settings: 3 matches)
  pkg/config.py:10: class Settings(BaseSettings):
  pkg/app.py:3: settings = Settings()
Next: read_file(path, start_line) a few lines above a hit, or answer if a line above already shows it."""
KEYWORD = """1 file contains 'timeout' (case-insensitive), most occurrences first:
shop/shop/billing.py: 3 (line 6: def apply_discount(total, code):)"""
DEFINITION = """class Settings(BaseSettings) is defined in pkg/config.py line 10.
pkg/config.py, outline of class Settings, lines 10-40 of 40 (members' first lines):
10: class Settings(BaseSettings):
11:     timeout = 30"""


def test_shown_lines_reads_every_tool_shape() -> None:
    shown = shown_lines([READ, SEARCH, KEYWORD, DEFINITION])
    assert shown["pkg/config.py"][11] == "    timeout = 30"
    assert shown["pkg/config.py"][14].strip().startswith("raise ValueError")
    assert 15 not in shown["pkg/config.py"]  # the note after the lines is not a line
    assert shown["pkg/app.py"][3] == "settings = Settings()"
    assert shown["shop/shop/billing.py"][6] == "def apply_discount(total, code):"


def test_citation_from_arguments_or_from_the_answer_text() -> None:
    c = citation({"source": "pkg/config.py:11", "quote": "`timeout = 30`"}, "30")
    assert c == Citation("pkg/config.py", 11, "timeout = 30")
    c = citation({}, "It is 30 (pkg/config.py line 11: `timeout = 30`).")
    assert c == Citation("pkg/config.py", 11, "timeout = 30")
    assert citation({}, "It is 30.") is None
    assert citation({"quote": "timeout = 30"}, "It is 30.") is None  # a quote with no place


def test_a_quote_must_be_a_line_the_tools_showed_in_the_cited_file() -> None:
    shown = shown_lines([READ, SEARCH])
    ok = ground(shown, Citation("pkg/config.py", 11, "timeout = 30"))
    assert ok == Grounded("pkg/config.py", 11, "timeout = 30", "timeout = 30")
    # the right file, another line: the line is corrected
    moved = ground(shown, Citation("config.py", 40, "timeout = 30"))
    assert isinstance(moved, Grounded) and moved.line == 11
    # a mistyped path (no tool showed such a file): the one file that shows the quote
    typo = ground(shown, Citation("dispatch.py", 11, "timeout = 30"))
    assert isinstance(typo, Grounded) and (typo.path, typo.line) == ("pkg/config.py", 11)
    # a line no tool showed (invented, or never read): refused, with what to do
    made_up = ground(shown, Citation("pkg/config.py", 11, "timeout = 60"))
    assert isinstance(made_up, str) and "not a line any observation showed" in made_up
    # shown, but in another file than the one cited
    elsewhere = ground(shown, Citation("pkg/config.py", 3, "settings = Settings()"))
    assert isinstance(elsewhere, str) and "pkg/app.py line 3" in elsewhere
    assert isinstance(ground(shown, Citation("pkg/config.py", 11, "  ")), str)


def test_what_the_question_asks() -> None:
    assert ask_of("What is the default timeout of Settings?") == "value"
    assert ask_of("How many retries does the client make?") == "value"
    assert ask_of("Which class does ConflictError subclass?") == "base"
    assert ask_of("What message does check raise when the timeout is negative?") == "message"
    assert ask_of("Which file defines Settings?") == "any"


def test_the_verify_step_compares_the_ask_with_the_quote() -> None:
    value_q = "What is the default timeout of Settings?"
    # a quote holding only a name does not answer a value question
    no_value = mismatch(value_q, "Settings sets it to 30.", "class Settings(BaseSettings):")
    assert no_value and "asks for a value" in no_value and "find_definition(name='Settings')" in no_value
    # a number the quote does not hold is a guess
    guessed = mismatch(value_q, "The timeout is 60.", "timeout = 30")
    assert guessed and "60" in guessed
    assert mismatch(value_q, "The timeout is 30 (pkg/config.py:11).", "timeout = 30") is None
    base_q = "Which class does Settings subclass?"
    assert mismatch(base_q, "BaseSettings", "class Settings(BaseSettings):") is None
    assert "class Name(Base)" in (mismatch(base_q, "BaseSettings", "timeout = 30") or "")
    assert mismatch(base_q, "It subclasses object.", "class Settings(BaseSettings):")
    msg_q = "What message does check raise?"
    assert mismatch(msg_q, "It says the timeout must be positive.", 'raise ValueError("timeout must be positive")') is None
    assert mismatch(msg_q, "It raises a ValueError.", "def check(self):")
    assert mismatch("Which file defines Settings?", "pkg/config.py", "class Settings(BaseSettings):") is None


def test_check_answer_accepts_grounded_answers_and_not_found_and_refuses_the_rest() -> None:
    observations = [READ, SEARCH]
    q = "What is the default timeout of Settings?"
    ok = check_answer(q, "30 seconds.", {"source": "pkg/config.py:11", "quote": "timeout = 30"}, observations)
    assert ok.answer == "30 seconds.\n\nEvidence: pkg/config.py:11: timeout = 30"
    refused = check_answer(q, "30 seconds.", {}, observations)
    assert refused.answer is None and "quotes no line" in refused.observation
    snippet = check_answer(q, "Settings sets 30.", {"source": "pkg/config.py:10", "quote": "class Settings(BaseSettings):"}, observations)
    assert snippet.answer is None and "asks for a value" in snippet.observation
    honest = check_answer(q, "Not found in the code.", {}, observations)
    assert honest.answer == "Not found in the code."
    assert check_answer(q, "I could not find it.", {}, observations).answer == f"{NOT_FOUND}. I could not find it."
    # on the last step a refusal becomes an honest "not found", naming the unchecked lead
    forced = check_answer(q, "It is 60.", {}, observations, forced=True)
    assert forced.answer is not None and forced.answer.startswith(NOT_FOUND) and "Unchecked lead: It is 60." in forced.answer


def test_an_override_question_needs_the_overriding_def_line() -> None:
    q = "Which class overrides Store.read?"
    assert ask_of(q) == "override" and ask_of("What maxsize does the queue get?") == "value"
    assert mismatch(q, "SqlStore overrides it.", "class SqlStore(Store):") is None
    assert mismatch(q, "SqlStore overrides it.", "    def read(self, key):") is None
    assert "def" in (mismatch(q, "SqlStore overrides it.", "return self.path + key") or "")


def test_the_name_to_read_after_a_refusal() -> None:
    q = "What message does DispatchQueue.put raise when QueueFullError is full?"
    assert lookup_name(q, "", []) == "DispatchQueue.put"
    assert lookup_name(q, "", ["DispatchQueue.put"]) == "QueueFullError"
    assert lookup_name(q, "It comes from ShippingError.", ["dispatchqueue.put", "QueueFullError"]) == "ShippingError"
    assert lookup_name("What is the MAX_PARCELS limit?", "", []) == "MAX_PARCELS"
    assert lookup_name("what is the default?", "it is 3", []) is None


def test_a_base_question_quotes_the_class_it_names_or_a_base_of_it() -> None:
    q = "Which class does QueueFullError subclass?"
    classes = {"QueueFullError": ("DispatchError",), "DispatchError": ("ShippingError",)}
    assert mismatch(q, "DispatchError", "class QueueFullError(DispatchError):", classes) is None
    # a one-hop question: the base's own class line is not the answer, even when shown
    assert mismatch(q, "ShippingError", "class DispatchError(ShippingError):", classes)
    other = mismatch(q, "ShippingError", "class DispatchError(ShippingError):", {})
    assert other and "class line of DispatchError" in other and "QueueFullError" in other
    two_hop = "QueueFullError's base class in turn subclasses which class?"
    assert mismatch(two_hop, "ShippingError", "class DispatchError(ShippingError):", classes) is None


def test_a_message_refusal_names_the_quoted_message() -> None:
    why = mismatch("What message does put raise?", "It raises QueueFullError.", 'raise QueueFullError(f"all {n} slots are taken")')
    assert why and '"all {n} slots are taken"' in why


def test_quotes_match_whatever_their_case_and_plain_class_names_are_looked_up() -> None:
    shown = shown_lines(["pkg/a.py:116: # Constants shared by all lru cache instances:"])
    assert isinstance(ground(shown, Citation("pkg/a.py", 116, "constants shared by all LRU cache instances:")), Grounded)
    q = "At most how many locks does the Repository class keep in its LRU cache?"
    assert lookup_name(q, "", []) == "Repository"
    assert lookup_name("Which file defines it?", "", []) is None  # a sentence's first word is not a name


def test_a_which_method_answer_must_quote_the_name_it_gives() -> None:
    q = "Which method of the Application class takes a snapshot of an aggregate?"
    assert ask_of(q) == "name" and ask_of("Which class does QueueFullError subclass?") == "base"
    invented = mismatch(q, "The method `snapshot` takes it.", "class Application(Generic[TAggregateID]):")
    assert invented and "`snapshot`" in invented
    assert mismatch(q, "`take_snapshot` does.", "    def take_snapshot(self, aggregate_id, version=None):") is None
    assert mismatch(q, "Application.take_snapshot does.", "def take_snapshot(self, aggregate_id):") is None
    # an answer naming no code name is not judged by this rule
    assert mismatch(q, "The snapshot method.", "def take_snapshot(self):") is None
    assert mismatch("Which file defines Settings?", "`config.py`", "class Settings:") is None


def test_with_definition_checks_a_value_answer_must_give_a_value_its_quote_holds() -> None:
    q = "What is the upper limit of the polling interval, in milliseconds?"
    described = "wait() polls with exponential backoff until the timeout."
    assert mismatch(q, described, "while True:") is None  # runs recorded before: as they ran
    refused = mismatch(q, described, "while True:", patches=["definition_checks"])
    assert refused and "does not give the one your quote shows" in refused
    assert mismatch(q, "800 ms", "max_sleep_interval_ms = 800.0", patches=["definition_checks"]) is None  # 800.0 read as 800
    assert mismatch("Which module does it fall back to?", "eventsourcing.popo", 'or "eventsourcing.popo"', patches=["definition_checks"]) is None


def test_pointer_lines_are_the_lines_sharing_the_most_words_with_the_question() -> None:
    from actors.agent.verify import pointer_lines

    observation = "pkg/poll.py, lines 1-4 of 4:\n1: def wait(self):\n2:     sleep_interval_ms = 100.0\n3:     max_sleep_interval_ms = 800.0\n4:     return None"
    lines = pointer_lines("What is the upper limit of the sleep interval, in milliseconds?", observation)
    assert lines[0] == "3: max_sleep_interval_ms = 800.0" and "2: sleep_interval_ms = 100.0" in lines
    assert "1: def wait(self):" not in lines
    assert pointer_lines("Who wrote it?", observation) == []


def test_the_name_a_question_gives_most_specifically() -> None:
    from actors.agent.asks import question_name

    assert question_name("What message does DispatchQueue.put() raise?") == "DispatchQueue.put"
    assert question_name("Which class does QueueFullError subclass, besides TimeoutError?") == "QueueFullError"
    assert question_name("What is MAX_RETRIES set to?") == "MAX_RETRIES"
    assert question_name("What is the default of the events_table_name parameter?") == "events_table_name"
    assert question_name("Which method of the Application class takes a snapshot?") == "Application"
    assert question_name("Which TypeError does it raise?") is None  # Python's own
    assert question_name("Which environment variable selects the persistence module?") is None


def test_with_patch_private_names_a_name_with_a_leading_underscore_is_the_question_s_name() -> None:
    from actors.agent.asks import names_shown, question_name, question_names

    private = {
        "What minor version does _LAST_GLIBC_MINOR assume by default?": "_LAST_GLIBC_MINOR",
        "_TrimmedRelease, which canonicalize_version uses, subclasses which class?": "_TrimmedRelease",
        "What does the warning _parse_glibc_version issues say?": "_parse_glibc_version",
        "What does the _Cache class keep?": "_Cache",
        "Which method of _Pool.acquire waits?": "_Pool.acquire",
    }
    for question, name in private.items():
        assert question_name(question, GROUNDED_PATCHES) == name
        assert question_name(question, grounded_without("private_names")) != name  # runs recorded without it replay as they ran
    assert question_name("_TrimmedRelease, which canonicalize_version uses", grounded_without("private_names")) == "canonicalize_version"
    # names without the prefix are found as before
    assert question_name("What is MAX_RETRIES set to?", GROUNDED_PATCHES) == "MAX_RETRIES"
    assert question_name("Which class does QueueFullError subclass, besides TimeoutError?", GROUNDED_PATCHES) == "QueueFullError"
    assert question_name("Which TypeError does it raise?", GROUNDED_PATCHES) is None
    assert question_names("Does _Pool.acquire call _wait_for?", GROUNDED_PATCHES) == ["_Pool.acquire", "_wait_for"]
    assert not names_shown("What is _MAX_LIMIT?", "1: MAX_LIMIT = 3", GROUNDED_PATCHES)
    assert names_shown("What is _MAX_LIMIT?", "1: _MAX_LIMIT = 3", GROUNDED_PATCHES)


def test_with_patch_restated_an_answer_must_give_something_the_question_does_not() -> None:
    q = "In _LEGACY_MANYLINUX_MAP, which legacy manylinux tag name is the glibc 2.12 version mapped to?"
    line = '    (2, 12): "manylinux2010",'
    restated = "_manylinux.py maps legacy manylinux tag names to glibc 2.12 versions. Evidence: _manylinux.py:211"
    assert "restates the question" in mismatch(q, restated, line, patches=GROUNDED_PATCHES)
    assert mismatch(q, restated, line, patches=grounded_without("restated")) is None  # runs recorded without it: as they ran
    assert mismatch(q, "It is mapped to manylinux2010.", line, patches=GROUNDED_PATCHES) is None
    short = "In tags.INTERPRETER_SHORT_NAMES, what short name is the jython interpreter mapped to?"
    assert mismatch(short, "jy", '    "jython": "jy",', patches=GROUNDED_PATCHES) is None
    assert "restates" in mismatch(short, "The jython interpreter is mapped to a short name in INTERPRETER_SHORT_NAMES.",
                                  '    "jython": "jy",', patches=GROUNDED_PATCHES)
    # a "where" question is answered by a place: no new word needed
    assert mismatch("Where is _LEGACY_MANYLINUX_MAP defined?", "In _manylinux.py.", "_LEGACY_MANYLINUX_MAP = {", patches=GROUNDED_PATCHES) is None


def test_with_patches_kind_words_and_names_one_which_module_level_function_asks_for_a_name_and_gets_one() -> None:
    from actors.agent.asks import ask_of

    q = "After building the current environment, which module-level function does Marker.evaluate hand the parsed markers to?"
    assert (ask_of(q, grounded_without("kind_words")), ask_of(q, GROUNDED_PATCHES)) == ("any", "name")
    prose = "The environment is determined from the current Python process."
    why = mismatch(q, prose, "        The environment is determined from the current Python process.", patches=[*GROUNDED_PATCHES, "definition_checks"])
    assert why is not None and "asks which function, and your answer names none" in why
    right = "`_evaluate_markers`, with the environment it built."
    assert mismatch(q, right, "        return _evaluate_markers(", patches=[*GROUNDED_PATCHES, "definition_checks"]) is None


def test_a_value_quoted_through_a_name_is_found_on_the_line_setting_that_name() -> None:
    read = (
        "pkg/poll.py, lines 1-5 of 5:\n1: def wait(self):\n2:     sleep_interval_ms = 100.0\n"
        "3:     max_sleep_interval_ms = 800.0\n4:     while True:\n5:         sleep_interval_ms = min(sleep_interval_ms * 2, max_sleep_interval_ms)"
    )
    q = "The polling interval doubles after each check. What is its upper limit, in milliseconds?"
    quote = {"source": "pkg/poll.py:5", "quote": "sleep_interval_ms = min(sleep_interval_ms * 2, max_sleep_interval_ms)"}
    ok = check_answer(q, "800 milliseconds.", quote, [read], patches=["definition_checks"])
    assert ok.answer == "800 milliseconds.\n\nEvidence: pkg/poll.py:3: max_sleep_interval_ms = 800.0"
    # the starting value is set by a name the quote uses too, but it is not what the question asks
    assert check_answer(q, "100 milliseconds.", quote, [read], patches=["definition_checks"]).answer is None
    assert check_answer(q, "800 milliseconds.", quote, [read]).answer is None  # runs recorded before: as they ran


def test_a_quote_of_find_definitions_header_cites_the_line_it_names() -> None:
    shown = (
        "class SQLiteRecorder(Recorder) is defined in sqlite.py line 3.\n"
        "sqlite.py, lines 3-4 of 9:\n3: class SQLiteRecorder(Recorder):\n4:     pass"
    )
    q = "Which file defines the SQLite recorder classes?"
    args = {"source": "sqlite.py:3", "quote": "class SQLiteRecorder(Recorder) is defined in sqlite.py line 3."}
    ok = check_answer(q, "sqlite.py", args, [shown], patches=["definition_checks"])
    assert ok.answer == "sqlite.py\n\nEvidence: sqlite.py:3: class SQLiteRecorder(Recorder):"
    assert check_answer(q, "sqlite.py", args, [shown]).answer is None  # runs recorded before: as they ran


def test_a_quote_running_on_past_a_shown_def_line_is_grounded_at_that_line() -> None:
    shown = "3 files match 'snapshot':\napplication.py (snapshot: 6 matches)\n  application.py:826: def take_snapshot("
    q = "Which method of the Application class takes a snapshot?"
    args = {"source": "application.py:826", "quote": "def take_snapshot(self, aggregate_id: UUID) -> None:"}
    ok = check_answer(q, "take_snapshot", args, [shown], patches=["definition_checks"])
    assert ok.answer == "take_snapshot\n\nEvidence: application.py:826: def take_snapshot("
    assert check_answer(q, "take_snapshot", args, [shown]).answer is None  # runs recorded before: as they ran


def test_with_definition_checks_a_two_hop_base_and_a_docstring_message_are_refused() -> None:
    hop = "WaitError subclasses a base class of the store errors. Which class does that base class in turn subclass?"
    own = "class WaitError(StoreError):"
    assert mismatch(hop, "StoreError", own) is None  # runs recorded before: as they ran
    refused = mismatch(hop, "StoreError", own, patches=["definition_checks"])
    assert refused and "find_definition(name='StoreError')" in refused
    assert mismatch(hop, "LibraryError", "class StoreError(LibraryError):", {"WaitError": ("StoreError",)}, patches=["definition_checks"]) is None
    assert mismatch("Which class does WaitError subclass?", "StoreError", own, patches=["definition_checks"]) is None  # one hop
    msg = "What is the text of the FactoryError message?"
    doc = '"""Raised when a factory cannot be created."""'
    assert mismatch(msg, "Raised when a factory cannot be created.", doc) is None
    assert "docstring" in (mismatch(msg, "Raised when a factory cannot be created.", doc, patches=["definition_checks"]) or "")
    assert mismatch(msg, "expected 1 factory", 'msg = f"expected 1 factory, found {n}"', patches=["definition_checks"]) is None


def test_with_definition_checks_a_one_word_class_name_must_be_in_its_quote() -> None:
    q = "Which class runs a projection in a thread until it is stopped?"
    answer = "Projection is the class that runs a projection in a thread."
    assert mismatch(q, answer, "return self.factory.process_recorder()") is None  # runs recorded before
    assert "`Projection`" in (mismatch(q, answer, "return self.factory.process_recorder()", patches=["definition_checks"]) or "")
    assert mismatch(q, "Runner does it.", "class Runner(Thread):", patches=["definition_checks"]) is None


LOOKUP_WITH_OVERRIDES = """method Store.read is defined in pkg/base.py line 20 (in Store).
Overridden in: SqlStore.read (pkg/sql.py:9), MemoryStore.read (pkg/memory.py:4).
pkg/base.py, lines 20-21 of 28:
20:     def read(self, key):
21:         return self.path + key
pkg/sql.py, lines 9-10 of 170 (override SqlStore.read):
 9:     def read(self, key):
10:         raise ConflictError(key)
pkg/memory.py, lines 4-5 of 5 (override MemoryStore.read):
4:     def read(self, key):
5:         return self.rows[key]"""


def test_a_methods_own_span_is_its_scope_and_its_overrides_lines_are_shown_but_not_its_scope() -> None:
    assert spans(LOOKUP_WITH_OVERRIDES) == [("pkg/base.py", 20, 21)]
    shown = shown_lines([LOOKUP_WITH_OVERRIDES])
    assert shown["pkg/sql.py"][10] == "        raise ConflictError(key)"
    assert override_owner([LOOKUP_WITH_OVERRIDES], Grounded("pkg/memory.py", 4, "def read(self, key):", "")) == "MemoryStore"
    assert override_owner([LOOKUP_WITH_OVERRIDES], Grounded("pkg/base.py", 20, "def read(self, key):", "")) is None


def test_an_override_answer_must_name_the_class_whose_def_line_it_quotes() -> None:
    question = "Which class overrides Store.read so that a missing row raises an error?"
    args = {"source": "pkg/sql.py:9", "quote": "def read(self, key):"}
    scope = spans(LOOKUP_WITH_OVERRIDES)
    wrong = check_answer(question, "MemoryStore", args, [LOOKUP_WITH_OVERRIDES], patches=["definition_checks"], scope=scope)
    assert wrong.answer is None and "in SqlStore's override" in wrong.observation
    right = check_answer(question, "SqlStore overrides it", args, [LOOKUP_WITH_OVERRIDES], patches=["definition_checks"], scope=scope)
    assert right.answer == "SqlStore overrides it\n\nEvidence: pkg/sql.py:9: def read(self, key):"


CONSTRUCT = """method Factory.construct is defined in pkg/factory.py line 30 (in Factory).
pkg/factory.py, lines 30-38 of 90:
30:     def construct(cls, env=None):
31:         \"\"\"Constructs a factory, reading the topic
32:         from the environment variable 'PERSISTENCE_MODULE'.
33:         \"\"\"
34:         # the legacy name comes second
35:         topic = (
36:             env.get("PERSISTENCE_MODULE", "")
37:             or "pkg.popo"
38:         )"""


def test_prose_lines_are_told_from_code_lines() -> None:
    lines = shown_lines([CONSTRUCT])["pkg/factory.py"]
    assert [n for n in range(30, 39) if in_prose(lines, n)] == [31, 32, 33, 34]


def test_with_patch_quote_checks_a_value_quoted_from_a_docstring_is_refused() -> None:
    question = "If no persistence module is named in the environment, which module topic does Factory.construct() fall back to?"
    doc = {"source": "pkg/factory.py:32", "quote": "from the environment variable 'PERSISTENCE_MODULE'."}
    code = {"source": "pkg/factory.py:37", "quote": 'or "pkg.popo"'}
    old = check_answer(question, "'PERSISTENCE_MODULE'", doc, [CONSTRUCT], patches=["definition_checks"])
    assert old.answer is not None  # runs recorded without the patch replay as they ran
    refused = check_answer(question, "'PERSISTENCE_MODULE'", doc, [CONSTRUCT], patches=["quote_checks", "definition_checks"])
    assert refused.answer is None and "docstring or a comment" in refused.observation
    right = check_answer(question, "pkg.popo", code, [CONSTRUCT], patches=["quote_checks", "definition_checks"])
    assert right.answer == 'pkg.popo\n\nEvidence: pkg/factory.py:37: or "pkg.popo"'


def test_with_patch_quote_checks_an_override_is_quoted_from_its_lines_and_a_wrong_path_is_corrected() -> None:
    question = "Which class overrides Store.read so that a missing row raises an error?"
    lookup = [LOOKUP_WITH_OVERRIDES]
    body = {"source": "pkg/base.py:10", "quote": "raise ConflictError(key)"}  # the override's body, the base's path
    moved = check_answer(question, "SqlStore", body, lookup, patches=["quote_checks", "definition_checks"])
    assert moved.answer == "SqlStore\n\nEvidence: pkg/sql.py:10: raise ConflictError(key)"
    unnamed = check_answer(question, "It raises ConflictError", body, lookup, patches=["quote_checks", "definition_checks"])
    assert unnamed.answer is None and "in SqlStore's override" in unnamed.observation and not unnamed.follow
    assert check_answer(question, "SqlStore", body, lookup, patches=["definition_checks"]).answer is None  # without the patch: the path must be right
    own = {"source": "pkg/base.py:9", "quote": "def read(self, key):"}  # in three files: stays in the cited one
    base = check_answer(question, "SqlStore", own, lookup, patches=["quote_checks", "definition_checks"], scope=spans(LOOKUP_WITH_OVERRIDES))
    assert base.answer is None and "not its override" in base.observation
    elsewhere = check_answer(question, "Store", {"source": "pkg/base.py:21", "quote": "return self.path + key"}, lookup,
                             patches=["quote_checks", "definition_checks"])
    assert elsewhere.answer is None and "not a line of an override" in elsewhere.observation and not elsewhere.follow


WAIT = """method Tracker.wait is defined in pkg/track.py line 10 (in Tracker).
pkg/track.py, lines 10-19 of 40:
10:     def wait(self, timeout: float = 1.0) -> None:
11:         \"\"\"Polls with exponential backoff, at most 800 ms apart.\"\"\"
12:         sleep_interval_ms = 100.0
13:         max_sleep_interval_ms = 800.0
14:         while True:
15:             if self.ready():
16:                 break
17:             sleep(sleep_interval_ms / 1000)
18:             sleep_interval_ms = min(
19:                 sleep_interval_ms * 2, max_sleep_interval_ms"""


def test_with_patch_quote_checks_a_value_quoted_from_the_wrong_line_takes_the_named_definitions_best_line() -> None:
    question = "In Tracker.wait(), the polling sleep interval doubles after each check. What is its upper limit, in milliseconds?"
    wrong_line = {"source": "pkg/track.py:15", "quote": "if self.ready():"}  # no value, no name assigned in view
    scope = spans(WAIT)
    right = check_answer(question, "800 milliseconds", wrong_line, [WAIT], scope=scope, patches=["quote_checks", "definition_checks"])
    assert right.answer == "800 milliseconds\n\nEvidence: pkg/track.py:13: max_sleep_interval_ms = 800.0"
    guess = check_answer(question, "100 milliseconds", wrong_line, [WAIT], scope=scope, patches=["quote_checks", "definition_checks"])
    assert guess.answer is None  # 100 is on a weaker line: not taken
    assert check_answer(question, "800 milliseconds", wrong_line, [WAIT], patches=["definition_checks"], scope=scope).answer is None  # without the patch


def test_with_patch_quote_checks_an_answers_value_must_be_the_quotes_not_one_built_around_it() -> None:
    lookup = """class Recorder is defined in pkg/rec.py line 3.
pkg/rec.py, lines 3-6 of 20:
3: class Recorder:
4:     def __init__(self, table_name: str = "events"):
5:         self.table_name = table_name + "_main"
6:         self.channel = self.table_name"""
    question = "What is the default value of the table_name parameter of Recorder?"
    built = {"source": "pkg/rec.py:5", "quote": 'self.table_name = table_name + "_main"'}
    refused = check_answer(question, "'events_main'", built, [lookup], scope=spans(lookup), patches=["quote_checks", "definition_checks"])
    assert refused.answer is None and "exactly as the quoted line states it" in refused.observation
    assert check_answer(question, "'events_main'", built, [lookup], patches=["definition_checks"], scope=spans(lookup)).answer is not None
    sig = {"source": "pkg/rec.py:4", "quote": 'def __init__(self, table_name: str = "events"):'}
    assert check_answer(question, "'events'", sig, [lookup], scope=spans(lookup), patches=["quote_checks", "definition_checks"]).answer is not None
    said = check_answer(question, "The recorder's default is 'events'.", sig, [lookup], scope=spans(lookup), patches=["quote_checks", "definition_checks"])
    assert said.answer is not None  # an apostrophe in prose is not a value


# -- patches all_names_shown and only_where ---------------------------------------------------


def test_every_code_name_a_question_gives_without_those_a_longer_one_holds() -> None:
    from actors.agent.asks import question_names

    assert question_names("In Connection.next_event, which error_status_hint does RemoteProtocolError carry?") == [
        "Connection.next_event", "RemoteProtocolError", "error_status_hint",
    ]
    assert question_names("Which method of Connection calls _process_error with their_role?") == [
        "their_role", "_process_error",
    ]
    assert question_names("What is the default timeout of HttpClient?") == ["HttpClient"]
    assert question_names("Which class runs a projection in a thread?") == []


def test_a_definition_shows_the_question_when_it_holds_every_name_the_question_gives() -> None:
    from actors.agent.asks import names_shown

    shown = "12:     def next_event(self):\n13:         raise RemoteProtocolError('too long', error_status_hint=431)"
    assert names_shown("In Connection.next_event, which error_status_hint does RemoteProtocolError carry?", shown)
    assert not names_shown("What error_status_hint does normalize_and_validate give?", "45: self.error_status_hint = hint")
    assert names_shown("Which class runs a projection in a thread?", "anything")  # no names: nothing missing


def test_with_patch_only_where_an_answer_saying_only_where_a_name_is_defined_answers_only_a_where_question() -> None:
    shown = ["pkg/config.py, lines 10-12 of 40:\n10: class Settings(BaseSettings):\n11:     timeout = 30\n12:     hint = 400"]
    question = "Which status hint does Settings give an error?"
    args = {"source": "pkg/config.py:12", "quote": "hint = 400"}
    where = "Settings.hint is defined in pkg/config.py line 12."
    refused = check_answer(question, where, args, shown, patches=GROUNDED_PATCHES)
    assert refused.answer is None and "only says where a name is defined" in refused.observation
    assert check_answer(question, where, args, shown, patches=grounded_without("only_where")).answer is not None  # runs recorded before: as they ran
    assert check_answer("Where is the status hint of Settings defined?", where, args, shown, patches=GROUNDED_PATCHES).answer is not None
    assert check_answer(question, "Settings gives 400.", args, shown, patches=GROUNDED_PATCHES).answer is not None
    forced = check_answer(question, where, args, shown, patches=GROUNDED_PATCHES, forced=True)
    assert forced.answer.startswith(NOT_FOUND)


@pytest.mark.parametrize(
    "question, before, with_head_phrase",
    [
        ("Which close code does Session.on_frame send when an incoming message is too large?", "message", "value"),
        ("What KeyError message does Registry.get raise for an unknown name?", "message", "message"),
        ("What is the message of the error Loader.load raises for an empty file?", "message", "message"),
        ("What is the default port of Server?", "value", "value"),
        ("Which status codes does Reply.check accept without raising?", "any", "value"),
        ("Which class does Loader subclass?", "base", "base"),  # a head naming neither: as before
        ("What does Pool.close log when a worker is still busy?", "any", "message"),  # a dotted name
        ("Which method of Pool calls drain?", "name", "name"),
    ],
)
def test_with_patch_head_phrase_a_which_what_questions_head_phrase_decides_what_it_asks(question, before, with_head_phrase):
    assert ask_of(question, grounded_without("head_phrase")) == before  # recorded runs without it are judged as they ran
    assert ask_of(question, GROUNDED_PATCHES) == with_head_phrase


def test_with_patch_new_name_a_which_function_answer_names_one_the_question_does_not_give_and_quotes_it():

    q = "Reporter.label gets a name from a helper. Which function of the helpers module does it call?"
    line = "def get_callback_name(cb: typing.Callable[..., typing.Any]) -> str:"  # its def line, as before
    right = "It calls `get_callback_name`."
    wrong_name = "It calls `get_fn_name`."
    only_given = "`Reporter.label` calls it."
    assert mismatch(q, right, line, patches=GROUNDED_PATCHES) is None
    assert "does not show" in mismatch(q, wrong_name, "    def __init__(self, retry_state: 'Reporter') -> None:", patches=GROUNDED_PATCHES)
    assert mismatch(q, only_given, "    def label(self):", patches=grounded_without("new_name")) is None  # as runs without it were judged
    assert "names only what the question gives" in mismatch(q, only_given, "    def label(self):", patches=GROUNDED_PATCHES)
    # A question naming the function it asks about elsewhere (a caller): the caller's name is new.
    q2 = "Which method of Conn calls _process_error when reading fails?"
    assert "names only what the question gives" in mismatch(
        q2, "The method that calls `_process_error` is in `_connection.py`.", "    self._process_error(role)", patches=GROUNDED_PATCHES
    )
    assert mismatch(q2, "`next_event` calls it.", "    def next_event(self):", patches=GROUNDED_PATCHES) is None
