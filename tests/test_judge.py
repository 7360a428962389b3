"""The judge measured on labelled answers: a fake judge of known leniency gets exactly its rates."""

import re

import pytest
from fakes import FakeClient

from harness.cli import main
from harness.execution.judge import calibrate
from harness.scoring.corpus import judge_items


def request_parts(request):
    text = request["messages"][0]["content"]
    return re.search(r"Correct answer: (.*)\n", text)[1], re.search(r"Response to grade: (.*)\n", text)[1]


def literal_judge(request):
    """Says YES when the response contains the correct answer's text: it accepts denials ("It's not
    Friday") and rejects paraphrases ("Twelve guests")."""
    correct, response = request_parts(request)
    return "YES" if any(v.lower() in response.lower() for v in correct.split(" / ")) else "NO"


def test_a_judge_is_measured_at_exactly_its_error_rates():
    right, wrong = judge_items()
    assert len(right) >= 50 and len(wrong) >= 80  # the corpus's wrong answers and wrong values put in right ones

    def contains(item):
        return any(v.lower() in item.answer.lower() for v in item.target.expected.values)

    calibration = calibrate(FakeClient(literal_judge, identity="literal"))
    assert calibration.accepts_wrong.n == len(wrong) and calibration.rejects_right.n == len(right)
    assert calibration.accepts_wrong.hits == sum(map(contains, wrong)) > 0
    assert calibration.rejects_right.hits == sum(not contains(item) for item in right) > 0
    everything = calibrate(FakeClient(lambda request: "YES", identity="yes-man"))
    assert everything.accepts_wrong.value == 1 and everything.rejects_right.value == 0
    assert everything.accepts_wrong.low > 0.9  # with its interval


def test_unreadable_replies_are_counted_apart():
    calibration = calibrate(FakeClient(lambda request: "Perhaps", identity="vague"))
    right, wrong = judge_items()
    assert calibration.unreadable == len(right) + len(wrong) and calibration.accepts_wrong.n == 0


def test_judge_check_prints_both_rates(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr("harness.models.backends.open_model", lambda *a, **k: FakeClient(literal_judge, "literal"))
    assert main(["judge-check", "--judge", "literal", "--results", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "accepts wrong answers: " in out and "rejects right answers: " in out and "judge-check: literal" in out


@pytest.mark.parametrize("reply, accepted", [("YES", True), ("no.", False)])
def test_the_judge_reads_its_reply(reply, accepted):
    from harness.execution.judge import judge_says_recalled

    right, _ = judge_items()
    recalled = judge_says_recalled(FakeClient(lambda r: reply), right[0].question, right[0].target.expected, "x")
    assert recalled is accepted


def test_a_judged_run_reports_its_judges_calibration_beside_its_verdicts(eval_file, tmp_path):
    from test_run import oracle

    from harness.execution.evals import load_eval
    from harness.execution.executors import run_eval
    from harness.reports.formats import text_report

    judge = FakeClient(lambda request: "YES", identity="yes-man")
    run_dir = run_eval(
        load_eval(eval_file),
        FakeClient(oracle),
        tmp_path,
        progress=False,
        judge=judge,
        judge_calibration=calibrate(judge).record(),
    )
    headline = text_report(run_dir).split("\n\n")[0]
    assert "Judge yes-man: " in headline and "answers the matcher scored `forgot` judged recalled" in headline
    assert "accepts wrong ones 100% (" in headline and "rejects right ones 0% (" in headline
