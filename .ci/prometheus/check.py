"""toolgate's metrics, scraped by a real Prometheus server (CI; `cargo test` does not need it).

The proxy runs with --listen in front of weather_server.py; a scripted host makes a known number
of admitted, refused and slow calls; Prometheus scrapes the proxy every second, and its query
API must show the refusal counter and the latency histograms moved exactly as the script
predicts (nothing before the load, the counts after it). Then: every dashboard expression runs
on that server, the alerting rules load into it, `promtool check metrics` passes on the scraped
exposition, and `promtool check rules` and `promtool test rules` on deploy/prometheus/.

    python3 .ci/prometheus/check.py TOOLGATE_BINARY
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
ADMITTED, REFUSED, SLOW = 40, 15, 5
PATIENCE = 60


def fail(message):
    print(f"prometheus check: {message}", file=sys.stderr)
    sys.exit(1)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def get(url, headers=None):
    request = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read().decode()


def call(address, number, city):
    body = json.dumps({"jsonrpc": "2.0", "id": number, "method": "tools/call",
                       "params": {"name": "weather", "arguments": {"city": city}}}).encode()
    request = urllib.request.Request(f"http://{address}/mcp", data=body, headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())["result"]["structuredContent"]["outcome"]


class Prometheus:
    def __init__(self, address):
        self.address = address

    def query(self, expression, at=None):
        parameters = {"query": expression}
        if at is not None:
            parameters["time"] = f"{at:.3f}"
        answer = json.loads(get(f"http://{self.address}/api/v1/query?" + urllib.parse.urlencode(parameters)))
        if answer.get("status") != "success":
            fail(f"query {expression!r}: {answer}")
        return answer["data"]["result"]

    def scalar(self, expression, at=None):
        result = self.query(expression, at)
        if not result:
            return None
        if len(result) != 1:
            fail(f"{expression!r} gave {len(result)} series: {result}")
        return float(result[0]["value"][1])

    def wait_for(self, expression, want):
        deadline = time.time() + PATIENCE
        seen = None
        while time.time() < deadline:
            seen = self.scalar(expression)
            if seen == want:
                return
            time.sleep(0.5)
        fail(f"{expression!r} is {seen}, not {want}, after {PATIENCE}s")


def main():
    if len(sys.argv) != 2:
        fail("usage: check.py TOOLGATE_BINARY")
    toolgate = sys.argv[1]
    for tool in ("prometheus", "promtool"):
        if shutil.which(tool) is None:
            fail(f"{tool} is not installed (Debian: apt-get install prometheus)")
    work = Path(tempfile.mkdtemp(prefix="toolgate-prometheus-"))
    processes = []
    try:
        proxy = subprocess.Popen(
            [toolgate, "mcp-proxy", "--root", str(ROOT / "tests/mcp"), "--listen", "127.0.0.1:0",
             "--", sys.executable, str(HERE / "weather_server.py")],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        processes.append(proxy)
        address = None
        while address is None:
            line = proxy.stderr.readline()
            if not line:
                fail("the proxy ended before it listened")
            if line.startswith("toolgate mcp-proxy: listening on http://"):
                address = line.strip().removeprefix("toolgate mcp-proxy: listening on http://").removesuffix("/mcp")
        # The proxy's later stderr (a refusal's record per refused call) goes to a file.
        drain = open(work / "proxy.log", "w")
        processes.append(subprocess.Popen(["cat"], stdin=proxy.stderr, stdout=drain))

        web = f"127.0.0.1:{free_port()}"
        shutil.copy(ROOT / "deploy/prometheus/alerts.yml", work / "alerts.yml")
        (work / "prometheus.yml").write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            "rule_files:\n  - alerts.yml\n"
            "scrape_configs:\n  - job_name: toolgate\n"
            f"    static_configs:\n      - targets: ['{address}']\n")
        server = subprocess.Popen(
            ["prometheus", f"--config.file={work / 'prometheus.yml'}", f"--storage.tsdb.path={work / 'data'}",
             f"--web.listen-address={web}", "--log.level=warn"],
            stdout=subprocess.DEVNULL, stderr=open(work / "prometheus.log", "w"))
        processes.append(server)
        prometheus = Prometheus(web)
        deadline = time.time() + PATIENCE
        while True:
            try:
                get(f"http://{web}/-/ready")
                break
            except OSError:
                if time.time() > deadline:
                    fail(f"Prometheus never became ready:\n{(work / 'prometheus.log').read_text()}")
                time.sleep(0.2)
        prometheus.wait_for('up{job="toolgate"}', 1.0)
        prometheus.wait_for("toolgate_upstream_up", 1.0)
        # Before the load: nothing decided, nothing timed.
        if prometheus.scalar("sum(toolgate_decisions_total)") not in (None, 0.0):
            fail("decisions were counted before any call")
        before = time.time()
        time.sleep(1.5)

        script = [("Lisbon", "success")] * ADMITTED + [("Badcity", "failure")] * REFUSED + [("Slowcity", "success")] * SLOW
        for number, (city, outcome) in enumerate(script, start=1):
            got = call(address, number, city)
            if got != outcome:
                fail(f"call {number} ({city}) was answered {got}, not {outcome}")
        total = len(script)

        # After it: exactly what the script predicts.
        prometheus.wait_for('sum(toolgate_decisions_total{outcome="rejected"})', float(REFUSED))
        prometheus.wait_for("sum(toolgate_decision_duration_seconds_count)", float(total))
        checks = {
            'sum(toolgate_decisions_total{outcome="admitted"})': float(ADMITTED + SLOW),
            'sum(toolgate_decisions_total{outcome="rejected",layer="schema",code="INVALID_RESPONSE"})': float(REFUSED),
            'sum(toolgate_decision_duration_seconds_bucket{le="+Inf"})': float(total),
            "sum(toolgate_upstream_duration_seconds_count)": float(total),
            "sum(toolgate_in_flight_calls)": 0.0,
        }
        for expression, want in checks.items():
            prometheus.wait_for(expression, want)
        # The refusal counter moved: absent (or zero) before the load, REFUSED since.
        earlier = prometheus.scalar('sum(toolgate_decisions_total{outcome="rejected"})', at=before)
        if earlier not in (None, 0.0):
            fail(f"the refusal counter read {earlier} before the load")
        # The slow calls took 50 ms or more: above the 32 ms bucket, all of them.
        slow = prometheus.scalar(
            'sum(toolgate_upstream_duration_seconds_bucket{le="+Inf"}) - sum(toolgate_upstream_duration_seconds_bucket{le="0.032"})')
        if not SLOW <= slow <= total:
            fail(f"{slow} upstream answers above 32 ms; the script made {SLOW} slow ones")
        p99 = prometheus.scalar("histogram_quantile(0.99, sum by (le) (toolgate_upstream_duration_seconds_bucket))")
        if not 0.032 <= p99 <= 0.128:
            fail(f"upstream p99 {p99}s; the slow calls take 50 ms")

        # Every dashboard expression runs on the real server; the refusal panels have data.
        dashboard = json.loads((ROOT / "deploy/grafana/toolgate.json").read_text())
        for panel in dashboard["panels"]:
            for target in panel["targets"]:
                expression = target["expr"].replace("$__rate_interval", "1m").replace("$tool", ".*")
                result = prometheus.query(expression)
                # A rate needs two scrapes of a series: the refusal panels get a few seconds.
                deadline = time.time() + 10
                while panel["title"].startswith("Refusal") and not result and time.time() < deadline:
                    time.sleep(0.5)
                    result = prometheus.query(expression)
                if panel["title"].startswith("Refusal") and not result:
                    fail(f"panel {panel['title']!r} shows nothing: {expression}")
        # The alerting rules load into the server, healthy.
        rules = json.loads(get(f"http://{web}/api/v1/rules"))["data"]["groups"]
        loaded = {rule["name"]: rule["health"] for group in rules for rule in group["rules"]}
        for alert in ("ToolgateRefusalSpike", "ToolgateUpstreamDown", "ToolgateUpstreamFailing"):
            if alert not in loaded:
                fail(f"{alert} did not load: {loaded}")
        deadline = time.time() + PATIENCE
        while any(health != "ok" for health in loaded.values()) and time.time() < deadline:
            time.sleep(1)
            rules = json.loads(get(f"http://{web}/api/v1/rules"))["data"]["groups"]
            loaded = {rule["name"]: rule["health"] for group in rules for rule in group["rules"]}
        if any(health != "ok" for health in loaded.values()):
            fail(f"rules are not healthy: {loaded}")

        # promtool on the exposition and on the rules. promtool reads the Prometheus text format,
        # what a plain client gets; the server above asked for OpenMetrics and scraped it.
        exposition = get(f"http://{address}/metrics", {"Accept": "text/plain"})
        checked = subprocess.run(["promtool", "check", "metrics"], input=exposition, text=True, capture_output=True)
        if checked.returncode != 0 or "toolgate_decisions_total" not in exposition:
            fail(f"promtool check metrics:\n{checked.stdout}{checked.stderr}")
        for command in (["promtool", "check", "rules", "alerts.yml"], ["promtool", "test", "rules", "alerts.test.yml"]):
            checked = subprocess.run(command, cwd=ROOT / "deploy/prometheus", text=True, capture_output=True)
            if checked.returncode != 0:
                fail(f"{' '.join(command)}:\n{checked.stdout}{checked.stderr}")
        print(f"prometheus: {total} calls scraped as predicted ({REFUSED} refused, {SLOW} slow); "
              f"dashboard queries and alerting rules run on Prometheus; promtool passed")
    finally:
        for process in reversed(processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
