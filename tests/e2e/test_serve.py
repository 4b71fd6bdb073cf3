"""fusor serve end to end: real server processes on loopback, driven by tritonclient (HTTP and
gRPC) and raw sockets. Every call has a timeout; each server is stopped with SIGTERM and must
exit 0."""
import gzip
import json
import os
import re
import signal
from pathlib import Path
import socket
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from conftest import FUSOR, model_path
from ort_compare import make_inputs, run_ort
from serve_util import Served, free_ports, get, post, tiny_model

TWO_CLASSES = """
serve:
  default_class: interactive
  seq_bucket: 8
  pad_values: {input_ids: 0, attention_mask: 0}
  classes:
    interactive: {batch_window_ms: 1, max_batch: 4, priority: 0, timeout_ms: 5000, max_queue_size: 64}
    batch: {batch_window_ms: 50, max_batch: 16, preferred_batch_sizes: [4, 8, 16], priority: 1,
            timeout_ms: 10000, max_queue_size: 256}
"""

TABLE = np.arange(32 * 4, dtype=np.float32).reshape(32, 4)
TABLE = (TABLE // 4) + 0.25 * (TABLE % 4)  # the demo model's lookup table


def expected(ids, mask):
    return TABLE[ids] * mask[..., None].astype(np.float32)


def text_inputs(module, ids, mask):
    out = []
    for name, value in (("input_ids", ids), ("attention_mask", mask)):
        t = module.InferInput(name, list(value.shape), "INT64")
        t.set_data_from_numpy(value)
        out.append(t)
    return out


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Served(tmp_path_factory.mktemp("serve"), TWO_CLASSES)
    yield s
    assert s.stop() == 0, s.output()


def test_http_and_grpc_infer_with_variable_lengths(server):
    rng = np.random.default_rng(0)
    cases = []
    for i in range(48):
        n = int(rng.integers(1, 20))
        cases.append((i, rng.integers(0, 32, size=(1, n)).astype(np.int64), (rng.random((1, n)) > 0.2).astype(np.int64)))

    def one(case):  # tritonclient's HTTP client is not thread-safe: one client per call
        i, ids, mask = case
        cls = "batch" if i % 2 else "interactive"
        if i % 3:
            client = httpclient.InferenceServerClient(server.url, connection_timeout=10, network_timeout=30)
            r = client.infer("demo", text_inputs(httpclient, ids, mask), parameters={"class": cls}, timeout=30)
        else:
            client = grpcclient.InferenceServerClient(server.grpc_url)
            r = client.infer("demo", text_inputs(grpcclient, ids, mask), parameters={"class": cls}, client_timeout=30)
        got = r.as_numpy("embeddings")
        assert got.shape == (1, ids.shape[1], 4)
        np.testing.assert_array_equal(got, expected(ids, mask))
        client.close()

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, cases))
    http = httpclient.InferenceServerClient(server.url, network_timeout=10)
    stats = http.get_inference_statistics("demo")["model_stats"][0]
    assert stats["inference_count"] >= 48
    assert stats["execution_count"] < stats["inference_count"], "concurrent requests should share batches"


def test_metadata_config_and_health_over_both_protocols(server):
    http = httpclient.InferenceServerClient(server.url, network_timeout=10)
    grpc = grpcclient.InferenceServerClient(server.grpc_url)
    assert http.is_server_live() and http.is_server_ready() and http.is_model_ready("demo")
    assert grpc.is_server_live() and grpc.is_server_ready() and grpc.is_model_ready("demo")
    meta = http.get_server_metadata()
    assert {"binary_tensor_data", "model_configuration", "statistics"} <= set(meta["extensions"])
    assert set(grpc.get_server_metadata(as_json=True)["extensions"]) == set(meta["extensions"])
    m = http.get_model_metadata("demo")
    assert m["inputs"][0]["shape"] == [-1, -1] and m["outputs"][0]["shape"] == [-1, -1, 4]
    assert grpc.get_model_metadata("demo", as_json=True)["inputs"][0]["shape"] == ["-1", "-1"]
    cfg = http.get_model_config("demo")
    assert cfg["max_batch_size"] == 16 and cfg["input"][0]["dims"] == [-1]
    gcfg = grpc.get_model_config("demo", as_json=True)["config"]
    assert gcfg["max_batch_size"] == 16 and gcfg["input"][0]["data_type"] == "TYPE_INT64"
    assert grpc.get_inference_statistics("demo", as_json=True)["model_stats"][0]["name"] == "demo"
    assert [m["name"] for m in http.get_inference_statistics()["model_stats"]] == ["demo"]
    assert not http.is_model_ready("nonesuch") and not grpc.is_model_ready("nonesuch")
    assert not grpc.is_model_ready("demo", model_version="7")


def test_classification_returns_the_top_classes_as_triton_does(server):
    """tritonclient's class_count was ignored: the whole tensor came back."""
    ids, mask = np.array([[3, 1, 4], [5, 9, 2]], np.int64), np.ones((2, 3), np.int64)
    scores = expected(ids, mask).reshape(2, -1)
    want = [[f"{scores[r, i]:f}:{i}" for i in sorted(range(scores.shape[1]), key=lambda i: (-scores[r, i], i))[:3]]
            for r in range(2)]
    http = httpclient.InferenceServerClient(server.url, network_timeout=10)
    grpc = grpcclient.InferenceServerClient(server.grpc_url)
    for client, module in ((http, httpclient), (grpc, grpcclient)):
        kinds = [{"binary_data": True}, {"binary_data": False}] if module is httpclient else [{}]
        for kind in kinds:
            out = module.InferRequestedOutput("embeddings", class_count=3, **kind)
            got = client.infer("demo", text_inputs(module, ids, mask), outputs=[out]).as_numpy("embeddings")
            text = [[v.decode() if isinstance(v, bytes) else v for v in row] for row in got]  # JSON gives str
            assert got.shape == (2, 3) and text == want, (module, kind)
    assert "classification" in http.get_server_metadata()["extensions"]


def test_an_output_requested_twice_is_refused(server):
    """Each copy was answered in full: a few KB asking for one output 50,000 times came back as
    gigabytes. Triton refused it ("output ... already exists in request")."""
    ids, mask = np.array([[3, 1, 4]], np.int64), np.ones((1, 3), np.int64)
    http = httpclient.InferenceServerClient(server.url, network_timeout=10)
    grpc = grpcclient.InferenceServerClient(server.grpc_url)
    for client, module in ((http, httpclient), (grpc, grpcclient)):
        twice = [module.InferRequestedOutput("embeddings"), module.InferRequestedOutput("embeddings")]
        with pytest.raises(InferenceServerException) as e:
            client.infer("demo", text_inputs(module, ids, mask), outputs=twice)
        assert "'embeddings' is requested twice" in e.value.message(), (module, e.value.message())
        once = client.infer("demo", text_inputs(module, ids, mask), outputs=twice[:1])
        assert once.as_numpy("embeddings").shape == (1, 3, 4)


def test_json_sent_as_a_form_is_read_as_json(server):
    """`curl -d @body.json`, as in Triton's examples, sends application/x-www-form-urlencoded;
    httplib refused such bodies past 8 KiB, saying they exceeded the 64 MB limit."""
    ids = np.arange(4 * 512).reshape(4, 512) % 32
    body = json.dumps({"inputs": [
        {"name": "input_ids", "shape": [4, 512], "datatype": "INT64", "data": ids.ravel().tolist()},
        {"name": "attention_mask", "shape": [4, 512], "datatype": "INT64", "data": [1] * ids.size}]})
    assert len(body) > 8192
    status, answer = post(server.url + "/v2/models/demo/infer", body.encode(),
                          {"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 200, answer
    got = json.loads(answer)["outputs"][0]
    np.testing.assert_allclose(np.array(got["data"], np.float32).reshape(got["shape"]),
                               expected(ids, np.ones_like(ids)), rtol=1e-5, atol=1e-6)


def infer_body(ids_shape=(1, 3), dtype="INT64", name="input_ids", data=None):
    n = int(np.prod(ids_shape))
    return json.dumps({"inputs": [
        {"name": name, "shape": list(ids_shape), "datatype": dtype, "data": data if data is not None else [1] * n},
        {"name": "attention_mask", "shape": [1, 3], "datatype": "INT64", "data": [1, 1, 1]},
    ]}).encode()


@pytest.mark.parametrize("body,status,words", [
    (b"{not json", 400, "malformed JSON"),
    (b"[]", 400, "JSON object"),
    (infer_body(ids_shape=(1, 4)), 400, "sequence length"),
    (infer_body(ids_shape=(3,)), 400, "shape"),
    (infer_body(dtype="FP32", data=[1.0, 2.0, 3.0]), 400, "datatype"),
    (infer_body(name="token_ids"), 400, "unexpected inference input 'token_ids'"),
    (infer_body(data=[1, 2]), 400, "values"),
    (infer_body(data=[1, 2, 99]), 400, "out of range"),
    # Read as false before, as Triton does not: the client got JSON it had not asked for.
    (infer_body()[:-1] + b', "parameters": {"binary_data_output": "yes"}}', 400, "'binary_data_output' must be true or false"),
])
def test_http_bad_requests_get_400_and_the_server_keeps_serving(server, body, status, words):
    code, text = post(f"{server.url}/v2/models/demo/infer", body, timeout=30)
    assert code == status, text
    err = json.loads(text)
    assert list(err) == ["error"] and words in err["error"]
    assert post(f"{server.url}/v2/models/demo/infer", infer_body(), timeout=30)[0] == 200


def test_http_status_codes_for_model_and_extension_errors(server):
    code, text = post(f"{server.url}/v2/models/nope/infer", infer_body())
    assert code == 404 and "unknown model 'nope'" in json.loads(text)["error"]
    code, text = post(f"{server.url}/v2/systemsharedmemory/region/x/register", b"{}")
    assert code == 501 and "error" in json.loads(text)
    code, text = post(f"{server.url}/v2/models/demo/infer", b"{}", headers={"Inference-Header-Content-Length": "9999"})
    assert code == 400
    code, text = post(f"{server.url}/v2/models/demo/infer", b"{}", headers={"Inference-Header-Content-Length": "-5"})
    assert code == 400 and "bad Inference-Header-Content-Length '-5'" in json.loads(text)["error"]  # was 2^64 - 5
    assert get(f"{server.url}/v2/models/demo/trace/setting")[0] == 501  # as /v2/trace/setting; was 404


def read_until_closed(s):
    """What the server sends until it closes the connection (after its one answer)."""
    reply = b""
    try:
        while chunk := s.recv(65536):
            reply += chunk
    except ConnectionResetError:
        pass
    s.close()
    return reply


def test_conflicting_content_lengths_are_refused_and_the_connection_closed(server):
    """With the first Content-Length (0) httplib read no body, and the next 'request' on the
    connection was this body: a GET smuggled past any proxy that framed by the second."""
    smuggled = b"GET /v2/models/stats HTTP/1.1\r\nHost: x\r\n\r\n"
    s = socket.create_connection(("127.0.0.1", server.http), timeout=10)
    s.sendall(b"POST /v2/models/demo/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
              + f"Content-Length: {len(smuggled)}\r\n\r\n".encode())
    time.sleep(0.3)  # answered before the body arrives, as a proxy would forward it later
    try:
        s.sendall(smuggled)
    except OSError:
        pass  # closed already
    reply = read_until_closed(s)
    assert reply.startswith(b"HTTP/1.1 400") and b"conflicting Content-Length" in reply, reply
    assert reply.count(b"HTTP/1.1 ") == 1, reply


@pytest.mark.parametrize("header, status, says", [
    (b"Content-Length: 1e3", b"400", b"not a number of bytes"), (b"Content-Length: -1", b"400", b"not a number of bytes"),
    (b"Transfer-Encoding: chunked", b"411", b"with a Content-Length")])
def test_a_body_without_a_plain_length_is_refused_and_the_connection_closed(server, header, status, says):
    """httplib read '1e3' as 1 and the rest of the body as the connection's next request, waited
    10 s on '-1', and read a chunked body whole, past serve.max_body_bytes."""
    s = socket.create_connection(("127.0.0.1", server.http), timeout=5)
    s.sendall(b"POST /v2/models/demo/infer HTTP/1.1\r\nHost: x\r\n" + header + b"\r\n\r\n")
    reply = read_until_closed(s)
    assert reply.startswith(b"HTTP/1.1 " + status) and says in reply, reply
    assert reply.count(b"HTTP/1.1 ") == 1, reply


def test_a_post_without_a_length_has_no_body_and_is_answered_at_once(server):
    """httplib read the body of a POST with neither Content-Length nor chunked encoding until the
    connection closed: `curl -X POST` waited 10 s (the read timeout) for its 400."""
    s = socket.create_connection(("127.0.0.1", server.http), timeout=5)  # the old 10 s would time out
    s.sendall(b"POST /v2/models/demo/infer HTTP/1.1\r\nHost: x\r\n\r\n")
    reply = b""
    while b"malformed JSON" not in reply and (chunk := s.recv(65536)):  # headers and body may come apart
        reply += chunk
    s.close()
    assert reply.startswith(b"HTTP/1.1 400") and b"malformed JSON" in reply, reply


def test_shared_memory_inputs_are_refused_as_unsupported(server):
    body = json.loads(infer_body())
    body["inputs"][0]["parameters"] = {"shared_memory_region": "r", "shared_memory_byte_size": 24}
    code, text = post(f"{server.url}/v2/models/demo/infer", json.dumps(body).encode())
    assert code == 501 and "shared memory is not supported" in json.loads(text)["error"], text
    ids = np.ones((1, 3), np.int64)
    inputs = text_inputs(grpcclient, ids, ids)
    inputs[0].set_shared_memory("r", 24)  # ignored: the input read as empty
    with pytest.raises(InferenceServerException) as e:
        grpcclient.InferenceServerClient(server.grpc_url).infer("demo", inputs, client_timeout=10)
    assert "UNIMPLEMENTED" in e.value.status() and "shared memory is not supported" in e.value.message()
    # An output named in shared memory came back inline with a 200.
    body = json.loads(infer_body())
    body["outputs"] = [{"name": "embeddings", "parameters": {"shared_memory_region": "r", "shared_memory_byte_size": 64}}]
    code, text = post(f"{server.url}/v2/models/demo/infer", json.dumps(body).encode())
    assert code == 501 and "output 'embeddings' names a shared memory region" in json.loads(text)["error"], text
    output = grpcclient.InferRequestedOutput("embeddings")
    output.set_shared_memory("r", 64)
    with pytest.raises(InferenceServerException) as e:
        grpcclient.InferenceServerClient(server.grpc_url).infer("demo", text_inputs(grpcclient, ids, ids),
                                                                outputs=[output], client_timeout=10)
    assert "UNIMPLEMENTED" in e.value.status() and "output 'embeddings'" in e.value.message()


def test_grpc_input_with_typed_and_raw_contents_is_refused(server):
    """Raw won, silently; Triton refuses the request."""
    import grpc
    from tritonclient.grpc import service_pb2, service_pb2_grpc
    q = service_pb2.ModelInferRequest(model_name="demo")
    for name in ("input_ids", "attention_mask"):
        q.inputs.add(name=name, datatype="INT64", shape=[1, 3])
        q.raw_input_contents.append(np.ones(3, np.int64).tobytes())
    q.inputs[0].contents.int64_contents.extend([2, 2, 2])
    with grpc.insecure_channel(server.grpc_url) as channel:
        with pytest.raises(grpc.RpcError) as e:
            service_pb2_grpc.GRPCInferenceServiceStub(channel).ModelInfer(q, timeout=10)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "raw_input_contents" in e.value.details()


def test_grpc_typed_values_the_type_cannot_hold_are_refused_and_long_errors_keep_their_code(server):
    """int_contents 300 as INT8 reached the model as 44 (HTTP refuses it); an error echoing a
    20 KB model name passed gRPC's 16 KiB header limit and arrived as RESOURCE_EXHAUSTED."""
    import grpc
    from tritonclient.grpc import service_pb2, service_pb2_grpc
    with grpc.insecure_channel(server.grpc_url) as channel:
        stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
        for datatype, field, value in (("INT8", "int_contents", 300), ("UINT16", "uint_contents", 70000)):
            q = service_pb2.ModelInferRequest(model_name="demo")
            q.inputs.add(name="input_ids", datatype=datatype, shape=[1])
            getattr(q.inputs[0].contents, field).append(value)
            with pytest.raises(grpc.RpcError) as e:
                stub.ModelInfer(q, timeout=10)
            assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, e.value.details()
            assert f"holds {value}, which {datatype} cannot hold" in e.value.details()
        q = service_pb2.ModelInferRequest(model_name="m" * 20000)
        with pytest.raises(grpc.RpcError) as e:
            stub.ModelInfer(q, timeout=10)
        assert e.value.code() == grpc.StatusCode.NOT_FOUND and len(e.value.details()) < 3000, e.value.code()


def test_grpc_errors_have_matching_status_codes(server):
    grpc = grpcclient.InferenceServerClient(server.grpc_url)
    ids = np.ones((1, 3), np.int64)
    with pytest.raises(InferenceServerException) as e:
        grpc.infer("nope", text_inputs(grpcclient, ids, ids), client_timeout=10)
    assert "NOT_FOUND" in e.value.status()
    with pytest.raises(InferenceServerException) as e:
        grpc.infer("demo", text_inputs(grpcclient, ids, np.ones((1, 4), np.int64)), client_timeout=10)
    assert "INVALID_ARGUMENT" in e.value.status()
    bad = grpcclient.InferInput("input_ids", [1, 3], "FP32")
    bad.set_data_from_numpy(np.ones((1, 3), np.float32))
    with pytest.raises(InferenceServerException) as e:
        grpc.infer("demo", [bad, text_inputs(grpcclient, ids, ids)[1]], client_timeout=10)
    assert "INVALID_ARGUMENT" in e.value.status() and "datatype" in e.value.message()
    with pytest.raises(InferenceServerException) as e:
        grpc.infer("demo", text_inputs(grpcclient, ids, ids), parameters={"class": "bulk"}, client_timeout=10)
    assert "INVALID_ARGUMENT" in e.value.status() and "unknown traffic class" in e.value.message()


def test_listener_queues_a_burst_of_new_connections(server):
    """16 streaming clients that connect at once must not wait for a SYN retry (~1 s each): the
    kernel completes connections into the listen backlog while the server is busy. Stopped, the
    server accepts none, so the ones the kernel queues are exactly the backlog's."""
    import select
    burst = 64
    os.kill(server.proc.pid, signal.SIGSTOP)
    socks = []
    try:
        for _ in range(burst):
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", server.http))
            socks.append(s)
        deadline = time.time() + 2  # loopback handshakes take microseconds; room for a loaded host
        connected = set()
        while time.time() < deadline and len(connected) < burst:
            _, writable, _ = select.select([], [s for s in socks if s not in connected], [], 0.05)
            connected |= {s for s in writable if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0}
        assert len(connected) == burst, f"{len(connected)} of {burst} connections queued (httplib's default backlog is 5)"
    finally:
        for s in socks:
            s.close()
        os.kill(server.proc.pid, signal.SIGCONT)
    assert get(f"{server.url}/v2/health/ready")[0] == 200


def test_client_that_disconnects_mid_request_and_slow_client(server):
    body = infer_body()
    # Disconnects halfway through the body, and one that drops the connection after sending it.
    for cut in (len(body) // 2, len(body)):
        s = socket.create_connection(("127.0.0.1", server.http), timeout=10)
        s.sendall(b"POST /v2/models/demo/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  + f"Content-Length: {len(body)}\r\n\r\n".encode() + body[:cut])
        s.close()
    # A slow client trickles its body; others are served meanwhile, and then it is answered too.
    slow = socket.create_connection(("127.0.0.1", server.http), timeout=30)
    slow.sendall(b"POST /v2/models/demo/infer HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                 + f"Content-Length: {len(body)}\r\n\r\n".encode())
    for i in range(0, len(body), 40):
        slow.sendall(body[i:i + 40])
        assert post(f"{server.url}/v2/models/demo/infer", body, timeout=10)[0] == 200
        time.sleep(0.05)
    reply = slow.recv(65536)
    slow.close()
    assert reply.startswith(b"HTTP/1.1 200")


def test_oversized_body_is_refused(tmp_path):
    s = Served(tmp_path, "serve:\n  max_body_bytes: 2048\n")
    try:
        ids = list(range(0, 32)) * 20
        body = infer_body(ids_shape=(1, len(ids)), data=ids)
        code, text = post(f"{s.url}/v2/models/demo/infer", body, timeout=30)
        assert code == 400 and "max_body_bytes" in json.loads(text)["error"]
        assert post(f"{s.url}/v2/models/demo/infer", infer_body(), timeout=30)[0] == 200
        # Refused from its headers: httplib read the body first, so a client that waits to be
        # told before sending it waited for the 10 s read timeout.
        early = socket.create_connection(("127.0.0.1", s.http), timeout=5)
        early.sendall(b"POST /v2/models/demo/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n")
        reply = b""
        while b"max_body_bytes" not in reply and (chunk := early.recv(65536)):
            reply += chunk
        early.close()
        assert reply.startswith(b"HTTP/1.1 400") and b"exceeds the limit of 2048 bytes" in reply, reply
        grpc = grpcclient.InferenceServerClient(s.grpc_url)
        big = np.ones((1, 1024), np.int64)
        with pytest.raises(InferenceServerException) as e:
            grpc.infer("demo", text_inputs(grpcclient, big, big), client_timeout=10)
        assert "RESOURCE_EXHAUSTED" in e.value.status()
    finally:
        assert s.stop() == 0


def test_a_compressed_body_is_bounded_once_inflated(tmp_path):
    """httplib inflated gzip bodies itself and bounded only what was sent: 407 KB inflated to 400
    MiB. fusor inflates them, and max_body_bytes bounds the inflated size."""
    s = Served(tmp_path, "serve:\n  max_body_bytes: 65536\n")
    try:
        url = f"{s.url}/v2/models/demo/infer"
        zipped = gzip.compress(infer_body())
        assert post(url, zipped, {"Content-Encoding": "gzip"}, timeout=30)[0] == 200
        bomb = gzip.compress(infer_body()[:-1] + b', "pad": "' + b"a" * (8 << 20) + b'"}')  # 8 MiB in ~8 KB
        assert len(bomb) < 65536
        code, text = post(url, bomb, {"Content-Encoding": "gzip"}, timeout=30)
        assert code == 400 and "exceeds the limit of 65536 bytes once inflated" in json.loads(text)["error"], text
        code, text = post(url, zipped[:len(zipped) // 2], {"Content-Encoding": "gzip"}, timeout=30)
        assert code == 400 and "cut short" in json.loads(text)["error"], text
        http = httpclient.InferenceServerClient(s.url)  # tritonclient's own compression
        ids, mask = np.array([[3, 1, 4]], np.int64), np.ones((1, 3), np.int64)
        result = http.infer("demo", text_inputs(httpclient, ids, mask), request_compression_algorithm="deflate")
        np.testing.assert_array_equal(result.as_numpy("embeddings"), expected(ids, mask))
        http.close()
    finally:
        assert s.stop() == 0, s.output()


def test_queue_overflow_and_timeout_give_503(tmp_path):
    s = Served(tmp_path, """
serve:
  classes:
    default: {batch_window_ms: 1500, adaptive_window: false, max_batch: 8, max_queue_size: 1, timeout_ms: 5000}
    short: {batch_window_ms: 2000, adaptive_window: false, max_batch: 8, max_queue_size: 8, timeout_ms: 100}
""")
    try:
        url = f"{s.url}/v2/models/demo/infer"
        with ThreadPoolExecutor(2) as pool:
            first = pool.submit(post, url, infer_body())
            time.sleep(0.3)  # the first waits for its window; the queue (size 1) is full
            code, text = post(url, infer_body())
            assert code == 503 and "full" in json.loads(text)["error"]
            assert first.result(timeout=30)[0] == 200
        body = json.loads(infer_body())
        body["parameters"] = {"class": "short"}
        code, text = post(url, json.dumps(body).encode())
        assert code == 503 and "timed out" in json.loads(text)["error"]
        code, metrics = get(f"127.0.0.1:{s.metrics}/metrics")
        assert 'nv_inference_request_failure{model="demo",version="1",class="short",reason="unavailable"} 1' in metrics.decode()
    finally:
        assert s.stop() == 0


def test_a_grpc_request_its_client_gave_up_on_is_not_computed(tmp_path):
    """A gRPC client that gives up while its request waits in a batch window (a deadline that
    passes, a stream it cancels) is answered CANCELLED, and the request never runs: the server
    used to compute it anyway and count it a success."""
    s = Served(tmp_path, """
serve:
  classes:
    default: {batch_window_ms: 1500, adaptive_window: false, max_batch: 8}
""")
    try:
        client = grpcclient.InferenceServerClient(s.grpc_url)
        ids = np.ones((1, 4), np.int64)
        with pytest.raises(InferenceServerException) as e:
            client.infer("demo", text_inputs(grpcclient, ids, ids), client_timeout=0.3)
        assert "DEADLINE_EXCEEDED" in e.value.status()
        client.start_stream(callback=lambda result, error: None)
        client.async_stream_infer("demo", text_inputs(grpcclient, ids, ids))
        time.sleep(0.3)
        client.stop_stream(cancel_requests=True)
        labels = 'model="demo",version="1",class="default"'
        deadline = time.time() + 10
        while time.time() < deadline:  # both are dropped once their window closes
            metrics = get(f"127.0.0.1:{s.metrics}/metrics")[1].decode()
            if f'nv_inference_request_failure{{{labels},reason="cancelled"}} 2' in metrics:
                break
            time.sleep(0.2)
        assert f'nv_inference_request_failure{{{labels},reason="cancelled"}} 2' in metrics
        assert f"nv_inference_exec_count{{{labels}}} 0" in metrics
        assert f"nv_inference_request_success{{{labels}}} 0" in metrics
        # A patient client on the same server is still answered.
        r = client.infer("demo", text_inputs(grpcclient, ids, ids), client_timeout=30)
        np.testing.assert_array_equal(r.as_numpy("embeddings"), expected(ids, ids))
        client.close()
    finally:
        assert s.stop() == 0


def test_thousands_of_waiting_grpc_calls_are_bounded_by_its_thread_quota(tmp_path):
    """The sync gRPC server ran each call on a thread of its own: 20000 calls waiting in a batch
    made thousands of threads. Past kGrpcMaxThreads (512, grpc_server.h) a call is refused at once
    with RESOURCE_EXHAUSTED; the calls it holds are answered, and the server serves on."""
    import asyncio
    import tritonclient.grpc.aio as aioclient
    s = Served(tmp_path, """
serve:
  classes:
    default: {batch_window_ms: 4000, adaptive_window: false, max_batch: 4096, max_queue_size: 100000, timeout_ms: 0}
""")
    ids, mask = np.array([[3, 1, 4]], np.int64), np.ones((1, 3), np.int64)
    peak, sampling = [0], [True]

    def sample_threads():
        while sampling[0]:
            for line in open(f"/proc/{s.proc.pid}/status"):
                if line.startswith("Threads:"):
                    peak[0] = max(peak[0], int(line.split()[1]))
            time.sleep(0.05)

    async def flood(n):
        client = aioclient.InferenceServerClient(s.grpc_url)
        inputs = text_inputs(aioclient, ids, mask)

        async def one():
            try:
                r = await client.infer("demo", inputs, client_timeout=30)
                np.testing.assert_array_equal(r.as_numpy("embeddings"), expected(ids, mask))
                return "ok"
            except InferenceServerException as e:
                return e.status()
        outcomes = await asyncio.gather(*(one() for _ in range(n)))
        await client.close()
        return outcomes

    sampler = threading.Thread(target=sample_threads)
    sampler.start()
    try:
        try:
            outcomes = asyncio.run(flood(2500))
        finally:
            sampling[0] = False
            sampler.join()
        counts = {o: outcomes.count(o) for o in set(outcomes)}
        assert set(counts) <= {"ok", "StatusCode.RESOURCE_EXHAUSTED", "StatusCode.UNAVAILABLE"}, counts
        assert counts.get("ok", 0) >= 300, counts
        assert peak[0] < 512 + 100, f"{peak[0]} threads; {counts}"
        client = grpcclient.InferenceServerClient(s.grpc_url)
        r = client.infer("demo", text_inputs(grpcclient, ids, mask), client_timeout=30)
        np.testing.assert_array_equal(r.as_numpy("embeddings"), expected(ids, mask))
        client.close()
    finally:
        assert s.stop() == 0, s.output()


def test_json_answers_are_not_compressed_for_clients_that_accept_brotli(server):
    """Python's requests sends Accept-Encoding: gzip, deflate, br when brotli is installed;
    cpp-httplib answered with brotli at quality 11: 2.75 s of CPU for a 1.2 MB answer."""
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", server.http, timeout=30)
    for path, body in [("/v2/models/demo/infer", infer_body()), ("/v2/models/demo", None)]:
        conn.request("POST" if body else "GET", path, body, {"Accept-Encoding": "gzip, deflate, br"})
        resp = conn.getresponse()
        data = resp.read()
        assert resp.status == 200 and resp.getheader("Content-Encoding") is None, resp.getheaders()
        assert resp.getheader("Content-Type").split(";")[0] == "application/json"
        json.loads(data)
    conn.close()


def test_every_refused_request_is_counted_as_a_failure(server):
    """A body that does not parse, data that disagrees with its shape, an unknown class: each is
    a 400 that nv_inference_request_failure missed (the same fault counted on one route and
    not on another). A request that names no known class counts under the default one."""
    line = 'nv_inference_request_failure{model="demo",version="1",class="interactive",reason="bad_request"} '

    def failures():
        text = get(f"127.0.0.1:{server.metrics}/metrics")[1].decode()
        return int(next(l for l in text.splitlines() if l.startswith(line)).split()[-1])

    def successes():
        stats = httpclient.InferenceServerClient(server.url).get_inference_statistics("demo")["model_stats"][0]
        return int(stats["inference_stats"]["success"]["count"])

    before, ran = failures(), successes()
    url = f"{server.url}/v2/models/demo/infer"
    unknown_class = json.loads(infer_body())
    unknown_class["parameters"] = {"class": "nope"}
    # An output the model lacks was refused only after the model ran, and counted as a success.
    unknown_output = {**json.loads(infer_body()), "outputs": [{"name": "nope"}]}
    for body in [b"{not json", infer_body(ids_shape=(1, 4), data=[1, 2]), json.dumps(unknown_class),
                 json.dumps(unknown_output)]:
        code, _ = post(url, body.encode() if isinstance(body, str) else body)
        assert code == 400
    client = grpcclient.InferenceServerClient(server.grpc_url)
    ids = np.ones((1, 4), np.int64)
    with pytest.raises(InferenceServerException):
        client.infer("demo", text_inputs(grpcclient, ids, ids), parameters={"class": "nope"}, client_timeout=30)
    with pytest.raises(InferenceServerException, match="unknown output 'nope'"):
        client.infer("demo", text_inputs(grpcclient, ids, ids), outputs=[grpcclient.InferRequestedOutput("nope")],
                     client_timeout=30)
    assert successes() == ran
    # Raw contents shorter than their shape, which tritonclient itself would refuse to send.
    request = grpcclient.service_pb2.ModelInferRequest(model_name="demo")
    request.inputs.add(name="input_ids", datatype="INT64", shape=[1, 4])
    request.raw_input_contents.append(np.ones(2, np.int64).tobytes())
    with pytest.raises(grpc.RpcError) as e:
        client._client_stub.ModelInfer(request, timeout=30)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    client.close()
    assert failures() - before == 7
    # Triton counts queue time for successes only; a request the model failed (an id out of range,
    # above) was counted too, and dashboards dividing queue time by the success count were off.
    stats = httpclient.InferenceServerClient(server.url).get_inference_statistics("demo")["model_stats"][0]
    assert stats["inference_stats"]["queue"]["count"] == stats["inference_stats"]["success"]["count"], stats


def test_an_answer_written_while_draining_closes_its_keep_alive_connection(tmp_path):
    """Keep-alive clients met a broken pipe on their next request once the server stopped."""
    import http.client
    s = Served(tmp_path, """
serve:
  classes:
    default: {batch_window_ms: 1500, adaptive_window: false, max_batch: 8}
""")
    conn = http.client.HTTPConnection("127.0.0.1", s.http, timeout=30)
    conn.request("POST", "/v2/models/demo/infer", infer_body())
    time.sleep(0.3)  # waiting in its batch window
    s.proc.send_signal(signal.SIGTERM)
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("Connection") == "close", resp.getheaders()
    resp.read()
    conn.close()
    assert s.stop() == 0


def test_metrics_have_triton_names_per_class_and_histograms(server):
    code, text = get(f"127.0.0.1:{server.metrics}/metrics")
    assert code == 200
    text = text.decode()
    for name in ["nv_inference_request_success", "nv_inference_request_failure", "nv_inference_count",
                 "nv_inference_exec_count", "nv_inference_queue_duration_us", "nv_inference_compute_infer_duration_us",
                 "nv_inference_request_duration_us", "nv_inference_pending_request_count"]:
        assert f'{name}{{model="demo",version="1",class="interactive"' in text, name
        assert f'{name}{{model="demo",version="1",class="batch"' in text, name
    assert 'nv_inference_request_latency_us_bucket{model="demo",version="1",class="batch",le="+Inf"}' in text


@pytest.mark.parametrize("taken", ["http", "grpc", "metrics"])
def test_a_second_server_on_a_port_in_use_fails_with_one_line(server, taken):
    """A second server must not share a running one's port: with SO_REUSEPORT (cpp-httplib's
    default) it bound beside it and the kernel split the connections between the two."""
    ports = dict(zip(["http", "grpc", "metrics"], free_ports(3)))
    ports[taken] = getattr(server, taken)
    args = [FUSOR, "serve"] + [a for k, v in ports.items() for a in (f"--{k}", str(v))]
    r = subprocess.run(list(map(str, args)), capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]  # after the model's load lines
    assert last.startswith("fusor: error: ") and f":{ports[taken]}" in last and "in use" in last, r.stderr
    assert get(f"{server.url}/v2/health/ready")[0] == 200


@pytest.mark.parametrize("first", ["http", "grpc"])
def test_a_host_not_of_this_machine_fails_with_the_reason(first):
    """192.0.2.1 is TEST-NET-1 (RFC 5737): no machine has it, and no name lookup is involved. The
    gRPC listener reports only that it bound nothing; a bind of fusor's own finds the reason."""
    http, grpc, metrics = free_ports(3)
    if first == "grpc":
        http = 0
    r = subprocess.run(list(map(str, [FUSOR, "serve", "--host", "192.0.2.1", "--http", http, "--grpc", grpc,
                                      "--metrics", metrics])), capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    port = http if first == "http" else grpc
    assert r.stderr.strip().splitlines()[-1] == \
        f"fusor: error: cannot listen on 192.0.2.1:{port}: Cannot assign requested address", r.stderr


def test_ready_over_http_means_every_listener_is_up(tmp_path):
    """HTTP answered ready as soon as it listened, while gRPC and metrics were still binding: a
    client that waited for HTTP's readiness then had its first gRPC stream refused (CI)."""
    for attempt in range(5):
        http, grpc_port, metrics = free_ports(3)
        proc = subprocess.Popen(list(map(str, [FUSOR, "serve", "--http", http, "--grpc", grpc_port,
                                               "--metrics", metrics])),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.time() + 60
            while time.time() < deadline:  # asked as often as it answers: the first 200 counts
                assert proc.poll() is None, "fusor serve exited"
                try:
                    if get(f"127.0.0.1:{http}/v2/health/ready", timeout=2)[0] == 200:
                        break
                except OSError:
                    time.sleep(0.001)
            for port in (grpc_port, metrics):
                socket.create_connection(("127.0.0.1", port), timeout=2).close()  # refused if not bound
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=30) == 0


def test_sigterm_finishes_accepted_requests_then_exits_0(tmp_path):
    s = Served(tmp_path, "serve:\n  classes:\n    default: {batch_window_ms: 1000, adaptive_window: false}\n")
    url = f"{s.url}/v2/models/demo/infer"
    with ThreadPoolExecutor(6) as pool:
        pending = [pool.submit(post, url, infer_body()) for _ in range(6)]
        time.sleep(0.4)  # all six are queued, waiting for the 1 s window
        assert s.stop(timeout=30) == 0, s.output()
        assert [f.result(timeout=30)[0] for f in pending] == [200] * 6


def test_sigterm_runs_a_forming_batch_at_once(tmp_path):
    """Shutdown stopped the listeners, which wait for their requests, before it drained the
    batchers: a request in a 120 s window held the exit for 120 s (a 9e12 ms one, forever)."""
    s = Served(tmp_path, "serve:\n  classes:\n    default: {batch_window_ms: 120000, adaptive_window: false, "
                         "timeout_ms: 0}\n")
    ids, mask = np.array([[3, 1, 4]], np.int64), np.ones((1, 3), np.int64)
    grpc = grpcclient.InferenceServerClient(s.grpc_url)
    with ThreadPoolExecutor(2) as pool:
        http = pool.submit(post, f"{s.url}/v2/models/demo/infer", infer_body(), timeout=60)
        rpc = pool.submit(lambda: grpc.infer("demo", text_inputs(grpcclient, ids, mask), client_timeout=60))
        time.sleep(0.5)  # both wait in the forming batch
        start = time.time()
        assert s.stop(timeout=20) == 0, s.output()
        assert time.time() - start < 10
        assert http.result(timeout=5)[0] == 200
        np.testing.assert_array_equal(rpc.result(timeout=5).as_numpy("embeddings"), expected(ids, mask))
    grpc.close()


def test_sigterm_exits_while_a_client_trickles_its_body(tmp_path):
    """A byte every 2 s never hits the 10 s read timeout, and shutdown waited for that request
    forever. It now waits at most its drain limit (30 s, docs/serve.md), then cuts it off."""
    s = Served(tmp_path)
    slow = socket.create_connection(("127.0.0.1", s.http), timeout=10)
    slow.sendall(b"POST /v2/models/demo/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
    time.sleep(0.5)
    s.proc.send_signal(signal.SIGTERM)
    start = time.time()
    try:
        while s.proc.poll() is None and time.time() - start < 45:
            slow.sendall(b" ")
            time.sleep(2)
    except OSError:
        pass  # the server cut the connection off
    took = time.time() - start
    slow.close()  # which ends that request: the old server exited only now
    assert s.stop(timeout=5) == 0, s.output()
    assert took < 40, f"the server exited {took:.0f} s after SIGTERM, once the client closed"


def test_sigterm_exits_at_once_while_clients_hold_idle_connections(tmp_path):
    """Clients keep their connections open between requests (tritonclient, Prometheus). The
    listeners' threads waited out the 30 s keep-alive timeout on them, so SIGTERM took 30 s, past
    Kubernetes' default grace period. Idle HTTP, gRPC and metrics connections stay open here."""
    s = Served(tmp_path, TWO_CLASSES)
    ids, mask = np.array([[3, 1, 4]], np.int64), np.ones((1, 3), np.int64)
    http = httpclient.InferenceServerClient(s.url, network_timeout=10)
    grpc = grpcclient.InferenceServerClient(s.grpc_url)
    for client, module in ((http, httpclient), (grpc, grpcclient)):
        np.testing.assert_array_equal(client.infer("demo", text_inputs(module, ids, mask)).as_numpy("embeddings"),
                                      expected(ids, mask))
    metrics = socket.create_connection(("127.0.0.1", s.metrics), timeout=10)
    metrics.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    assert metrics.recv(64).startswith(b"HTTP/1.1 200"), s.output()
    assert s.stop(timeout=10) == 0, s.output()  # 30 s before
    metrics.close()


def test_a_busy_client_keeps_its_connection(server):
    """httplib closed a connection after its fifth request, so clients reconnected every fifth."""
    import http.client
    host, port = server.url.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    body = json.dumps({"inputs": [
        {"name": "input_ids", "shape": [1, 3], "datatype": "INT64", "data": [3, 1, 4]},
        {"name": "attention_mask", "shape": [1, 3], "datatype": "INT64", "data": [1, 1, 1]}]})
    sockets = set()
    for _ in range(20):
        conn.request("POST", "/v2/models/demo/infer", body, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        assert resp.status == 200, resp.read()
        resp.read()
        assert resp.getheader("Connection") != "close"
        sockets.add(conn.sock.getsockname())
    conn.close()
    assert len(sockets) == 1


def test_idle_keep_alive_clients_do_not_stall_new_ones(server):
    """A connection holds its HTTP thread while idle between requests. The pool had 128 threads,
    so past 128 idle clients (perf_analyzer at concurrency 200, a fleet of pollers) every new
    connection waited up to the 30 s keep-alive timeout."""
    idle = []
    try:
        for _ in range(300):
            host, port = server.url.split(":")
            c = socket.create_connection((host, int(port)), timeout=10)
            c.sendall(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n")
            assert c.recv(64).startswith(b"HTTP/1.1 200")
            idle.append(c)
        status, body = post(f"{server.url}/v2/models/demo/infer", infer_body(), timeout=10)
        assert status == 200, body
    finally:
        for c in idle:
            c.close()


def test_a_model_that_couples_its_rows_serves_each_request_alone(tmp_path):
    """minilm-l6-int8's DynamicQuantizeLinear takes one scale over its whole input: padded to the
    length bucket, or batched with others, a request's outputs moved by up to 0.3."""
    model = model_path("minilm-l6-int8")
    rng = np.random.default_rng(3)
    requests = [rng.integers(1000, 2000, size=(1, n)).astype(np.int64) for n in (17, 24, 9, 31, 17, 5)]
    alone = []
    for i, ids in enumerate(requests):  # each one by itself, at its own length
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        args = [FUSOR, "run", model, "--output-dir", tmp_path / f"alone{i}"]
        for name, value in feeds.items():
            np.save(tmp_path / f"{name}{i}.npy", value)
            args += ["--input", f"{name}={tmp_path / f'{name}{i}.npy'}"]
        subprocess.run(list(map(str, args)), check=True, capture_output=True)
        alone.append(np.load(tmp_path / f"alone{i}" / "last_hidden_state.npy"))
    s = Served(tmp_path, "", [("m", model)])
    try:
        def infer(ids):
            client = httpclient.InferenceServerClient(s.url, network_timeout=30)
            inputs = []
            for name, value in (("input_ids", ids), ("attention_mask", np.ones_like(ids)),
                                ("token_type_ids", np.zeros_like(ids))):
                inputs.append(httpclient.InferInput(name, list(value.shape), "INT64"))
                inputs[-1].set_data_from_numpy(value)
            return client.infer("m", inputs).as_numpy("last_hidden_state")

        with ThreadPoolExecutor(len(requests)) as pool:
            served = list(pool.map(infer, requests))
        for got, want in zip(served, alone):
            np.testing.assert_allclose(got, want, atol=1e-5)
    finally:
        assert s.stop() == 0, s.output()
    assert "each request runs alone" in s.output()


def test_soak_shows_no_memory_growth(server):
    http = httpclient.InferenceServerClient(server.url, network_timeout=30)
    rng = np.random.default_rng(1)

    def burst(n):
        for _ in range(n):
            k = int(rng.integers(1, 33))
            ids = rng.integers(0, 32, size=(1, k)).astype(np.int64)
            http.infer("demo", text_inputs(httpclient, ids, np.ones_like(ids)), timeout=30)

    # Warm for a while, not a count: every sequence bucket's session must exist, and RSS climbs
    # while more of the 128 HTTP threads serve their first requests (their stacks, the
    # allocator's per-thread caches). On a host serving ~3000 requests/s it rose 7.7 MB in the
    # first 3 s and 0.9 MB in the 15 s after 5 s; 300 requests were not enough there.
    deadline = time.time() + 5
    while time.time() < deadline:
        burst(200)
    before = server.rss_kib()
    deadline = time.time() + 15
    while time.time() < deadline:
        burst(200)
    growth = server.rss_kib() - before
    assert growth < 8 * 1024, f"RSS grew by {growth} KiB over the soak"


def test_matrix_picks_the_fusion_config_per_batch_bucket(tmp_path):
    """serve.matrix: a batch of 1 runs a session built without attention/GEMM-epilogue fusion, a
    batch of 8 one with every pass; both match ONNX Runtime. (Batch-size rows are for padded
    plans: packing is off here; token rows are tested in test_packing.py.)"""
    model = model_path("minilm-l6")
    config = """
fusion: {precision_check: off}
serve:
  packing: false
  classes:
    default: {batch_window_ms: 0, max_batch: 8, preferred_batch_sizes: [1, 8]}
  matrix:
    - {max_batch: 1, fusion: {fuse_attention: false, fuse_gemm_epilogue: false}}
    - {max_batch: 8}
"""
    s = Served(tmp_path, config, models=[("minilm", model)])
    try:
        client = httpclient.InferenceServerClient(s.url, network_timeout=120)
        for batch in (1, 8):
            inputs = make_inputs(model, batch, 16, seed=batch)
            tensors = []
            for name, value in inputs.items():
                t = httpclient.InferInput(name, list(value.shape), "INT64")
                t.set_data_from_numpy(value)
                tensors.append(t)
            r = client.infer("minilm", tensors, timeout=120)
            for name, want in run_ort(model, inputs).items():
                np.testing.assert_allclose(r.as_numpy(name), want, atol=1e-3, rtol=1e-3, err_msg=f"{name} batch {batch}")
    finally:
        assert s.stop() == 0, s.output()
    log = s.output()
    assert "batch sizes <=1: elemwise=1 norm_act=1 gemm_epilogue=0 attention=0" in log, log
    built = {int(m[0]): (int(m[1]), m[2]) for m in re.findall(
        r"session for (\d+) row\(s\) .*?: (\d+) fused item\(s\), \d+ kernel\(s\); fusion (.*)", log)}
    assert set(built) == {1, 8}, log
    assert "attention=0" in built[1][1] and "attention=1" in built[8][1], log
    assert built[1][0] < built[8][0], f"batch 8 should fuse more items than batch 1: {built}"


def test_a_cnn_gets_the_same_kernels_at_every_batch_size(tmp_path):
    """Plans after the first take the first plan's packed weights (kernels/cpu/packed_weights.h).
    On AVX-512 that once failed for Winograd's weights, and every later plan ran its 3x3 layers on
    reference convolutions: ResNet-18's batch-2 session had 4 fused items and 44 kernels against
    17 and 23, and served 2x slower. The sessions for 1 and 2 rows fuse and launch the same."""
    config = """
serve:
  classes:
    default: {batch_window_ms: 0, max_batch: 2, preferred_batch_sizes: [1, 2]}
"""
    model = model_path("resnet18")
    s = Served(tmp_path, config, models=[("resnet18", model)], threads=2)
    try:
        client = httpclient.InferenceServerClient(s.url, network_timeout=120)
        for rows in (1, 2):
            x = np.random.default_rng(rows).standard_normal((rows, 3, 224, 224)).astype(np.float32)
            t = httpclient.InferInput("input", list(x.shape), "FP32")
            t.set_data_from_numpy(x)
            r = client.infer("resnet18", [t], timeout=120)
            for name, want in run_ort(model, {"input": x}).items():
                np.testing.assert_allclose(r.as_numpy(name), want, atol=1e-3, rtol=1e-3, err_msg=f"{rows} rows")
    finally:
        assert s.stop() == 0, s.output()
    built = re.findall(r"session for (\d+) row\(s\) .*?: (\d+) fused item\(s\), (\d+) kernel\(s\)", s.output())
    assert sorted(rows for rows, _, _ in built) == ["1", "2"], s.output()
    assert len({(fused, kernels) for _, fused, kernels in built}) == 1, built


def test_a_model_without_a_mask_is_not_padded(tmp_path):
    """Padding a request to serve.seq_bucket is hidden only by a mask input. wav2vec2 has none:
    its 1000 samples ran padded to 1008, and its outputs moved by 1.4e-2 against ONNX Runtime's
    (3999 samples: 6.7e-3). Requests of one length still share batches."""
    model = model_path("wav2vec2-tiny")
    s = Served(tmp_path, "fusion: {precision_check: off}\n", models=[("w2v", model)], threads=2)
    try:
        client = httpclient.InferenceServerClient(s.url, network_timeout=120)
        for samples in (1000, 3999):
            x = np.random.default_rng(samples).standard_normal((1, samples)).astype(np.float32)
            t = httpclient.InferInput("input_values", list(x.shape), "FP32")
            t.set_data_from_numpy(x)
            r = client.infer("w2v", [t], timeout=120)
            for name, want in run_ort(model, {"input_values": x}).items():
                np.testing.assert_allclose(r.as_numpy(name), want, atol=1e-4, rtol=1e-4, err_msg=f"{samples} samples")
        # Fewer samples than the first convolution's window: the request's fault, not the server's.
        t = httpclient.InferInput("input_values", [1, 100], "FP32")
        t.set_data_from_numpy(np.zeros((1, 100), np.float32))
        with pytest.raises(InferenceServerException, match="cannot run at these input shapes") as e:
            client.infer("w2v", [t], timeout=120)
        assert e.value.status() == "400"
        client.close()
    finally:
        assert s.stop() == 0, s.output()
    assert "no mask input to hide padding" in s.output(), s.output()
    assert re.findall(r"session for 1 row\(s\) input_values=\[1,(\d+)\]", s.output()) == ["1000", "3999"], s.output()


def test_config_with_the_gate_on_gates_a_model_without_a_verdict_before_serving(tmp_path):
    """docs/check.md: with --config and precision_check on, a model with no saved verdict for that
    config is gated first and its verdict saved beside it; the next start reuses the verdict."""
    model = tiny_model(tmp_path)
    verdicts = Path(str(model) + ".fusor-verdicts.json")

    for first in (True, False):
        s = Served(tmp_path, "fusion: {precision_check: strict}\n", models=[("tiny", model)])
        assert s.stop() == 0, s.output()
        assert ("running the gate first" in s.output()) == first, s.output()
        (key, verdict), = json.loads(verdicts.read_text())["verdicts"].items()
        assert verdict["passed"] is True and "mode=strict" in key


def test_a_signal_during_start_up_stops_the_server_at_once():
    """SIGINT was held until every model had loaded and planned (17 s for four), and the server
    then started, drained and exited 0."""
    http, grpc_port, metrics = free_ports(3)
    proc = subprocess.Popen([FUSOR, "serve", "--model", f"llama={model_path('llama-tiny').parent}", "--http", str(http),
                             "--grpc", str(grpc_port), "--metrics", str(metrics)], stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)  # loading: llama-tiny's plans take seconds
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 130 and "SIGINT during start-up: stopped" in err, err
