"""The gate from Python, on the same inputs as the Rust benchmarks (BENCHMARKS.md, "From
Python"): the small mix (1,000 job_status responses, 70 % successes, 10 % failures, 20 %
near-misses) as the `throughput` binary writes it, decided

  - by the binding (`toolgate_gate.Contract.admit`), one thread and four;
  - by `json.loads` + `jsonschema` (Draft 2020-12, formats asserted) + the contract's rules and
    projection in Python: the seeds' stack (crates/bench/compare/seeds_stack.py);
  - by `json.loads` + `fastjsonschema` and `json.loads` + `jsonschema-rs` validation alone, which
    do less (no duplicate keys, no formats for fastjsonschema's default, no rules, no projection).

The Rust reference is the gate's `admit` in this very build, timed in Rust over the same
inputs (`_native._admit_loop`), so the difference is what the binding itself costs per call.
Thread scaling is measured on the small mix and on the medium input (~64 KB, run_history): the
GIL is released while deciding bodies of 2 KiB and more.

Usage: python bench_binding.py INPUTS_FOLDER   (as the `throughput` binary writes it)
Prints markdown tables; every figure is the median of 41 rounds and the fastest round.
"""

import json
import pathlib
import statistics
import sys
import threading
import time
from datetime import datetime

import fastjsonschema
import jsonschema
import jsonschema_rs
import toolgate_gate

ROOT = pathlib.Path(__file__).resolve().parents[3]
ROUNDS = 41


def load(folder: pathlib.Path):
    inputs = [path.read_bytes() for path in sorted((folder / "inputs").glob("*.json"))]
    request = json.loads((folder / "request.json").read_text())
    now = datetime.fromisoformat(request.pop("now").replace("Z", "+00:00"))
    return inputs, request, now


def rounds(one_pass, count):
    """ns per input: the median and the fastest of ROUNDS passes."""
    one_pass()  # warm up
    times = []
    for _ in range(ROUNDS):
        started = time.perf_counter_ns()
        one_pass()
        times.append((time.perf_counter_ns() - started) / count)
    return statistics.median(times), min(times)


def main(folder: pathlib.Path):
    inputs, request, now = load(folder)
    contract = toolgate_gate.Contract.load(ROOT, "job_status", "v1")
    schema = json.loads((ROOT / "contracts/job_status/v1/envelope.schema.json").read_text())

    typed = toolgate_gate.Request(request["request_id"], context=request["context"])

    def binding():
        for raw in inputs:
            contract.admit(raw, typed)

    def binding_dict():
        for raw in inputs:
            contract.admit(raw, request, now)

    sys.path.insert(0, str(ROOT / "crates/bench/compare"))
    import seeds_stack  # noqa: E402

    seeds = seeds_stack.make_gate(schema, {**request, "now": now.isoformat().replace("+00:00", "Z")})

    def seeds_pass():
        for raw in inputs:
            seeds(raw)

    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)

    def jsonschema_only():
        for raw in inputs:
            try:
                validator.is_valid(json.loads(raw))
            except ValueError:
                pass

    fast = fastjsonschema.compile(schema)

    def fastjsonschema_only():
        for raw in inputs:
            try:
                fast(json.loads(raw))
            except (ValueError, fastjsonschema.JsonSchemaException):
                pass

    rs = jsonschema_rs.validator_for(schema, validate_formats=True)

    def jsonschema_rs_only():
        for raw in inputs:
            try:
                rs.is_valid(json.loads(raw))
            except ValueError:
                pass

    # The binding and the Rust reference interleaved round by round, so drift on a shared
    # machine hits both alike.
    binding()
    ours, theirs = [], []
    for _ in range(ROUNDS):
        started = time.perf_counter_ns()
        binding()
        ours.append((time.perf_counter_ns() - started) / len(inputs))
        theirs.extend(toolgate_gate._native._admit_loop(contract, inputs, typed, 1))
    rust = (statistics.median(theirs), min(theirs))
    results = {"binding": (statistics.median(ours), min(ours))}
    results["binding_dict"] = rounds(binding_dict, len(inputs))
    results["seeds"] = rounds(seeds_pass, len(inputs))
    results["jsonschema"] = rounds(jsonschema_only, len(inputs))
    results["fastjsonschema"] = rounds(fastjsonschema_only, len(inputs))
    results["jsonschema_rs"] = rounds(jsonschema_rs_only, len(inputs))

    # Threads sharing one contract, each deciding the same inputs: admissions per second.
    medium_contract = toolgate_gate.Contract.from_folder(folder / "run_history")
    medium = [(folder / "medium.json").read_bytes()] * 20

    def threaded(threads, gate, bodies):
        def work():
            for raw in bodies:
                gate.admit(raw, typed)

        best, per_round = [], []
        for _ in range(5):
            pool = [threading.Thread(target=work) for _ in range(threads)]
            started = time.perf_counter()
            for thread in pool:
                thread.start()
            for thread in pool:
                thread.join()
            per_round.append(threads * len(bodies) / (time.perf_counter() - started))
        return statistics.median(per_round), max(per_round)

    scaling = {
        "small mix": (threaded(1, contract, inputs), threaded(4, contract, inputs)),
        "medium (~64 KB)": (threaded(1, medium_contract, medium), threaded(4, medium_contract, medium)),
    }
    median, fastest = results["binding"]
    print(f"| implementation | ns per input, median of {ROUNDS} rounds | fastest round | vs the binding (median) |")
    print("| --- | --- | --- | --- |")
    print(f"| Rust `admit`, this build, timed in Rust | {rust[0]:,.0f} | {rust[1]:,.0f} | {rust[0] / median:.2f}× |")
    for name, label in [
        ("binding", "the binding, `Contract.admit` with a `Request`"),
        ("binding_dict", "the binding, `Contract.admit` with a dict (converted per call)"),
        ("seeds", "`json.loads` + `jsonschema` + rules and projection (the seeds' stack)"),
        ("jsonschema", "`json.loads` + `jsonschema` validation alone"),
        ("fastjsonschema", "`json.loads` + `fastjsonschema` validation alone"),
        ("jsonschema_rs", "`json.loads` + `jsonschema-rs` validation alone"),
    ]:
        if results.get(name) is None:
            continue
        m, f = results[name]
        print(f"| {label} | {m:,.0f} | {f:,.0f} | {m / median:.1f}× |")
    print()
    print(f"the binding adds {median - rust[0]:,.0f} ns per call beyond the Rust admit (medians; "
          f"{results['binding'][1] - rust[1]:,.0f} ns between the fastest rounds)")
    print()
    cores = len(__import__("os").sched_getaffinity(0))
    print(f"| input | 1 thread, admissions/s | 4 threads | scaling ({cores} cores) |")
    print("| --- | --- | --- | --- |")
    for name, (one, four) in scaling.items():
        print(f"| {name} | {one[0]:,.0f} (best {one[1]:,.0f}) | {four[0]:,.0f} (best {four[1]:,.0f}) | {four[0] / one[0]:.2f}× |")


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]))
