#!/usr/bin/env python3
"""Reads the event file that write_events writes with TensorBoard's own reader.

TensorBoard's EventFileLoader checks the TFRecord framing and both CRCs of every record (its
DataLossError fails the test); its EventAccumulator files the events by tag as the TensorBoard
server does, and its plugin_event_accumulator (the one behind the web UI) as the scalars and text
plugins see them. Checked: the file name, the file_version record, every tag, step, value and wall
time, the texts and their plugin.

usage: read_events_test.py WRITE_EVENTS TENSORBOARD_DIR
  TENSORBOARD_DIR: the folder scripts/fetch_tensorboard.sh fills; absent -> skipped (exit 77).
"""
import os
import re
import socket
import subprocess
import sys
import tempfile

SKIP = 77


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(SKIP)


def main(write_events, tb_dir):
    if not os.path.isfile(os.path.join(tb_dir, ".complete")):
        skip(f"tensorboard is not in {tb_dir} (scripts/fetch_tensorboard.sh puts it there)")
    sys.path.insert(0, tb_dir)
    try:
        import numpy  # noqa: F401  (Debian's python3-numpy, scripts/setup.sh)
    except ImportError:
        skip(f"{sys.executable} has no numpy (python3-numpy, scripts/setup.sh)")
    from tensorboard.backend.event_processing import event_accumulator, event_file_loader
    from tensorboard.backend.event_processing import plugin_event_accumulator
    from tensorboard.util import tensor_util

    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)
            print(f"FAIL: {what}")

    with tempfile.TemporaryDirectory() as logdir:
        path = subprocess.run([write_events, logdir], check=True, capture_output=True,
                              text=True).stdout.strip()
        name = os.path.basename(path)
        m = re.fullmatch(r"events\.out\.tfevents\.(\d{10})\.(.+)\.(\d+)\.(\d+)", name)
        check(m is not None, f"file name {name}")
        if m:
            check(m.group(2) == socket.gethostname(), f"host in {name}")
            check(m.group(4) == "0", f"first writer of the process is .0: {name}")

        # The raw events, every record's CRCs checked by TensorBoard's reader.
        events = list(event_file_loader.EventFileLoader(path).Load())
        check(len(events) == 1 + 2 + 4 + 4 + 4 + 3, f"{len(events)} events")
        check(events[0].file_version == "brain.Event:2", "first record is the file version")

        acc = event_accumulator.EventAccumulator(logdir, size_guidance={"scalars": 0,
                                                                        "tensors": 0})
        acc.Reload()
        check(acc.GetSourceWriter() == "cpuft", f"source writer {acc.GetSourceWriter()}")
        expected = {
            "train/loss": [(10, 1700000001.0, 0.6931), (20, 1700000002.0, 0.5)],
            "train/grad_norm": [(10, 1700000001.0, 1.5), (20, 1700000002.0, 1.25)],
            "train/learning_rate": [(10, 1700000001.0, 4e-05), (20, 1700000002.0, 2e-05)],
            "train/epoch": [(10, 1700000001.0, 0.5), (20, 1700000002.0, 1.0),
                            (20, 1700000003.0, 1.0)],
            "eval/loss": [(20, 1700000003.0, 0.45)],
            "eval/accuracy": [(20, 1700000003.0, 0.8125)],
            "eval/runtime": [(20, 1700000003.0, 1.5)],
            "train/train_runtime": [(20, 1700000004.0, 12.5)],
            "train/train_loss": [(20, 1700000004.0, 0.59)],
            "train/total_flos": [(20, 1700000004.0, 123456.0)],
        }
        tags = acc.Tags()
        check(sorted(tags["scalars"]) == sorted(expected), f"scalar tags {sorted(tags['scalars'])}")
        f32 = lambda x: float(numpy.float32(x))  # simple_value is a float32
        for tag, want in expected.items():
            if tag not in tags["scalars"]:
                continue
            got = [(e.step, e.wall_time, e.value) for e in acc.Scalars(tag)]
            want = [(s, w, f32(v)) for s, w, v in want]
            check(got == want, f"{tag}: {got} != {want}")

        texts = {"args/text_summary": '{"output_dir": "out", "learning_rate": 5e-05}',
                 "model_config/text_summary": '{"model_type": "bert", "hidden_size": 32}'}
        check(sorted(tags["tensors"]) == sorted(texts), f"tensor tags {tags['tensors']}")
        for tag, text in texts.items():
            if tag not in tags["tensors"]:
                continue
            (event,) = acc.Tensors(tag)
            check((event.step, event.wall_time) == (0, 1700000000.0), f"{tag} step, wall time")
            check(list(event.tensor_proto.string_val) == [text.encode()], f"{tag} text")
            check(event.tensor_proto.dtype == 7, f"{tag} dtype DT_STRING")  # types.proto
        check(sorted(acc.PluginTagToContent("text")) == sorted(texts), "text plugin tags")

        # As the web UI's data provider sees them: scalars migrated to the scalars plugin.
        pacc = plugin_event_accumulator.EventAccumulator(logdir, size_guidance={"tensors": 0})
        pacc.Reload()
        check(sorted(pacc.PluginTagToContent("scalars")) == sorted(expected),
              "scalars plugin tags")
        check(sorted(pacc.PluginTagToContent("text")) == sorted(texts), "text plugin tags (UI)")
        loss = [(e.step, float(tensor_util.make_ndarray(e.tensor_proto)))
                for e in pacc.Tensors("train/loss")]
        check(loss == [(10, f32(0.6931)), (20, 0.5)], f"train/loss in the scalars plugin {loss}")

    checks = "file name, records, scalars, texts, plugins"
    if failures:
        print(f"read_events_test: {len(failures)} failure(s)")
        return 1
    print(f"read_events_test: TensorBoard reads every event back ({checks})")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
