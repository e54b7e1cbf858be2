"""The file ledger: windows already given, runs of identical calls, and what the model last saw."""

from __future__ import annotations

from tools.files.ledger import FileReadLedger, ReadCount


class TestFileReadLedger:
    """A window given before is unchanged until the file changes; runs count identical calls in a row."""

    def test_a_window_given_before_is_unchanged_and_the_run_grows(self) -> None:
        ledger = FileReadLedger()
        assert [ledger.note_read("/a", 1, (1, 500)) for _ in range(3)] == [
            ReadCount(False, 1), ReadCount(True, 2), ReadCount(True, 3),
        ]
        assert ledger.note_read("/a", 1, (501, 500)) == ReadCount(False, 1), "another window is another call"

    def test_any_other_tool_breaks_the_run_but_not_the_record(self) -> None:
        ledger = FileReadLedger()
        ledger.note_read("/a", 1, (1, None))
        ledger.note_read("/a", 1, (1, None))
        ledger.note_tool_call("read_file")
        assert ledger.note_read("/a", 1, (1, None)).in_a_row == 3, "a read does not break a run of reads"
        ledger.note_tool_call("terminal")
        assert ledger.note_read("/a", 1, (1, None)) == ReadCount(True, 1)

    def test_searches_are_counted_in_the_same_runs(self) -> None:
        ledger = FileReadLedger()
        assert [ledger.note_search(("x", ".")) for _ in range(2)] == [1, 2]
        ledger.note_read("/a", 1, (1, None))
        assert ledger.note_search(("x", ".")) == 1

    def test_a_changed_file_starts_over(self) -> None:
        ledger = FileReadLedger()
        ledger.note_read("/a", 1, (1, None))
        assert ledger.note_read("/a", 2, (1, None)) == ReadCount(False, 1)
        assert ledger.seen_mtime("/a") == 2

    def test_the_models_own_write_is_what_it_has_seen(self) -> None:
        ledger = FileReadLedger()
        ledger.note_read("/a", 1, (1, None))
        ledger.note_write("/a", 5)
        assert ledger.seen_mtime("/a") == 5
        assert not ledger.note_read("/a", 5, (1, None)).unchanged
        assert ledger.seen_mtime("/b") is None

    def test_forgetting_reads_keeps_what_was_seen(self) -> None:
        ledger = FileReadLedger()
        ledger.note_read("/a", 1, (1, None))
        ledger.forget_reads()
        assert ledger.note_read("/a", 1, (1, None)) == ReadCount(False, 1)
        assert ledger.seen_mtime("/a") == 1
