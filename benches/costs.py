#!/usr/bin/env python3
"""Where a server spends its time under one load: CPU (user, system) and context switches
(voluntary: a thread blocked and was woken; involuntary: it was preempted), summed over
all of the server's threads by the kernel (wait4's rusage of the server process), per
delivered message. docs/async.md reads beaver and beaver-async side by side with it.

    cargo build --release --bin beaver --example bench && cargo build --release -p beaver-async
    python3 benches/costs.py [--rounds 3] [--client go]

Linux only. Servers listen on 127.0.0.1, on a free port; every run ends by itself.
"""
import argparse, os, resource, signal, socket, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENARIOS = [
    # name, bench flags, deliveries
    ("1:1-16B", ["-np", "1", "-ns", "1", "-n", "3000000", "-ms", "16"], 3_000_000),
    ("1:5-16B", ["-np", "1", "-ns", "5", "-n", "1000000", "-ms", "16"], 5_000_000),
    ("10:100-1000B", ["-np", "10", "-ns", "100", "-n", "100000", "-ms", "1000"], 10_000_000),
    ("reqrep-16B", ["--reqrep", "-n", "20000", "-ms", "16"], 40_000),
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def servers():
    out = [("beaver", [os.path.join(ROOT, "target/release/beaver")])]
    a = os.path.join(ROOT, "target/release/beaver-async")
    if os.path.exists(a):
        out.append(("beaver-async", [a]))
    for p in ("/usr/sbin/nats-server", "nats-server"):
        try:
            subprocess.run([p, "--version"], capture_output=True, check=True)
            out.append(("nats-server", [p]))
            break
        except (OSError, subprocess.CalledProcessError):
            pass
    return out


def run(cmd, client, flags):
    port = free_port()
    srv = subprocess.Popen(cmd + ["-a", "127.0.0.1", "-p", str(port)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.02)
    url = f"nats://127.0.0.1:{port}"
    if client == "go" and "--reqrep" in flags:
        return None  # nats_bench.go has no request/reply mode: examples/bench only
    started = time.time()
    subprocess.run([client_path(client), "-s", url] + flags + ["foo"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)
    wall = time.time() - started
    srv.send_signal(signal.SIGTERM)
    _, _, ru = os.wait4(srv.pid, 0)
    return ru, wall


def client_path(client):
    if client == "go":
        return os.path.join(ROOT, "target/nats_bench")
    return os.path.join(ROOT, "target/release/examples/bench")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--client", default="bench", choices=["bench", "go"])
    args = ap.parse_args()
    rows = []
    for name, flags, deliveries in SCENARIOS:
        for server, cmd in servers():
            samples = []
            for _ in range(args.rounds):
                r = run(cmd, args.client, flags)
                if r is None:
                    break
                ru, wall = r
                samples.append((ru.ru_utime, ru.ru_stime, ru.ru_nvcsw, ru.ru_nivcsw, wall))
            if not samples:
                continue
            med = [statistics.median(x[i] for x in samples) for i in range(5)]
            per = lambda v: v / deliveries
            rows.append((name, server, per(med[0]) * 1e9, per(med[1]) * 1e9,
                         per(med[2]), per(med[3]), deliveries / med[4]))
            print(f"{name:>13} {server:>13}: user {rows[-1][2]:7.0f} ns  sys {rows[-1][3]:7.0f} ns"
                  f"  vol.cs {rows[-1][4]:.4f}  invol.cs {rows[-1][5]:.4f}  per delivery",
                  file=sys.stderr)
    print(f"\nClient: {args.client}; medians of {args.rounds} rounds; per delivered message.\n")
    print("| scenario | server | user CPU ns | system CPU ns | voluntary switches | involuntary switches |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for name, server, u, s, v, i, _ in rows:
        print(f"| {name} | {server} | {u:.0f} | {s:.0f} | {v:.4f} | {i:.4f} |")


if __name__ == "__main__":
    main()
