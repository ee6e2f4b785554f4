"""``MappedFileQueue.flush_plan``: the files a flush writes, found from the newest back."""

from rmqproto.store.mappedfile import MappedFileQueue

PAGE = 4096
SIZE = 4 * PAGE


def filled(tmp_path, files, last_bytes):
    """A queue of ``files`` segments, all full but the last (``last_bytes`` written)."""
    queue = MappedFileQueue(str(tmp_path), SIZE)
    for i in range(files):
        queue.last_mapped_file(0).append(b"x" * (SIZE if i < files - 1 else last_bytes))
    return queue


def planned(queue, least_pages):
    """The plan's segments and positions (the plan released again, nothing written)."""
    plan = queue.flush_plan(least_pages)
    queue.abort_flush(plan)
    return [(m.file_from_offset, pos) for m, pos in plan if hasattr(m, "file_from_offset")]


def test_every_dirty_file_in_order_and_none_before_the_flushed_offset(tmp_path):
    queue = filled(tmp_path, 6, PAGE)
    queue.flushed_where = 3 * SIZE + PAGE  # in the fourth file: the first three are clean
    for mapped in queue.files[:3]:
        mapped.flushed_position = SIZE
    queue.files[3].flushed_position = PAGE
    # full files are flushed whatever least_pages says; the last one only with enough pages
    assert planned(queue, 0) == [(3 * SIZE, SIZE), (4 * SIZE, SIZE), (5 * SIZE, PAGE)]
    assert planned(queue, 2) == [(3 * SIZE, SIZE), (4 * SIZE, SIZE)]
    queue.close()


def test_nothing_when_everything_is_flushed(tmp_path):
    queue = filled(tmp_path, 300, PAGE)
    for mapped in queue.files:
        mapped.flushed_position = mapped.wrote_position
    queue.flushed_where = queue.max_offset
    assert planned(queue, 0) == []
    queue.close()
