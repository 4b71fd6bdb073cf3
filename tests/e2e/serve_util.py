"""Starts `fusor serve` on free loopback ports for a test and stops it with SIGTERM."""
import os
import random
import signal
import socket
import subprocess
import time
import urllib.request

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from conftest import FUSOR


def free_ports(n):
    """n distinct ports that were free just now: the sockets stay bound until all are picked, or
    the kernel may hand the same port out twice. FUSOR_TEST_PORTS=FIRST-LAST keeps them in that
    range (a machine shared with other servers); unset, the kernel picks."""
    first, _, last = os.environ.get("FUSOR_TEST_PORTS", "0-0").partition("-")
    candidates = None
    if int(first):
        ports = list(range(int(first), int(last) + 1))
        random.shuffle(ports)  # a port another test just left may still be in TIME_WAIT
        candidates = iter(ports)
    socks = []
    try:
        while len(socks) < n:
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", next(candidates) if candidates else 0))
            except OSError:
                s.close()
                continue
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class Served:
    def __init__(self, tmp_path, config="", models=(), threads=None):
        # Another process can take a port between its pick and fusor serve's bind: new ones then.
        for attempt in range(3):
            try:
                self._start(tmp_path, config, models, threads)
                return
            except RuntimeError as e:
                if attempt == 2 or "is the port in use?" not in str(e):
                    raise
                self.log.close()

    def _start(self, tmp_path, config, models, threads):
        self.http, self.grpc, self.metrics = free_ports(3)
        cfg = tmp_path / f"serve-{self.http}.yaml"
        cfg.write_text(config)
        args = [FUSOR, "serve", "--http", self.http, "--grpc", self.grpc, "--metrics", self.metrics, "--config", cfg]
        for name, path in models:
            args += ["--model", f"{name}={path}"]
        if threads:
            args += ["--threads", threads]
        self.log = open(tmp_path / f"serve-{self.http}.log", "w+")
        self.proc = subprocess.Popen(list(map(str, args)), stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"fusor serve exited {self.proc.returncode}: {self.output()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.http}/v2/health/ready", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.1)
        self.proc.kill()
        raise RuntimeError("fusor serve did not become ready in 60 s")

    @property
    def url(self):
        return f"127.0.0.1:{self.http}"

    @property
    def grpc_url(self):
        return f"127.0.0.1:{self.grpc}"

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def rss_kib(self):
        for line in open(f"/proc/{self.proc.pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def stop(self, timeout=60):
        """SIGTERM, then the exit code (the server must exit by itself within `timeout`)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise


def post(url, body, headers=None, timeout=30):
    """POST; returns (status, body bytes) for any HTTP status."""
    req = urllib.request.Request(f"http://{url}", data=body, headers=headers or {}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def get(url, timeout=30):
    try:
        with urllib.request.urlopen(f"http://{url}", timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def tiny_model(folder):
    """A small float model, y = relu(x @ w + b) over [batch, 8], saved as folder/tiny.onnx."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])
    rng = np.random.default_rng(0)
    weights = [numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32), "w"),
               numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b")]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["xw"], name="mm"),
             helper.make_node("Add", ["xw", "b"], ["xwb"], name="bias"),
             helper.make_node("Relu", ["xwb"], ["y"], name="relu")]
    model = folder / "tiny.onnx"
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [x], [y], weights),
                                opset_imports=[helper.make_opsetid("", 17)]), model)
    return model
