"""The file ledger counts repeated reads of an unchanged region and remembers what the model last saw."""

from __future__ import annotations

from tools.files.ledger import FileReadLedger


class TestFileReadLedger:
    """Reads are counted per region of an unchanged file; a change or the model's own write starts over."""

    def test_repeated_reads_of_one_region_count_up(self) -> None:
        ledger = FileReadLedger()
        assert [ledger.note_read("/a", 1, (1, 500)) for _ in range(3)] == [1, 2, 3]
        assert ledger.note_read("/a", 1, (501, 500)) == 1, "another region counts apart"

    def test_a_changed_file_starts_over(self) -> None:
        ledger = FileReadLedger()
        ledger.note_read("/a", 1, (1, None))
        assert ledger.note_read("/a", 2, (1, None)) == 1
        assert ledger.seen_mtime("/a") == 2

    def test_the_models_own_write_is_what_it_has_seen(self) -> None:
        ledger = FileReadLedger()
        ledger.note_read("/a", 1, (1, None))
        ledger.note_write("/a", 5)
        assert ledger.seen_mtime("/a") == 5
        assert ledger.note_read("/a", 5, (1, None)) == 1
        assert ledger.seen_mtime("/b") is None

    def test_forgetting_reads_keeps_what_was_seen(self) -> None:
        ledger = FileReadLedger()
        ledger.note_read("/a", 1, (1, None))
        ledger.forget_reads()
        assert ledger.note_read("/a", 1, (1, None)) == 1
        assert ledger.seen_mtime("/a") == 1
