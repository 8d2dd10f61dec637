"""Loopback fake OpenAI and Gemini servers speaking the providers' wire formats.

One threaded HTTP/1.1 server (stdlib only) answers both APIs:

* OpenAI: ``POST /v1/chat/completions``, ``POST /v1/files`` (multipart),
  ``POST /v1/batches``, ``GET /v1/batches/{id}``, ``GET /v1/files/{id}/content``.
* Gemini: ``POST /{v1,v1beta}/models/{model}:generateContent``,
  ``POST /{v}/models/{model}:batchGenerateContent``, ``GET /{v}/batches/{id}``.

A normal answer labels every constraint id found in the request's response schema
(``labeler(ids, prompt) -> {id: 0|1}``, default: all 1). Scripted faults are queued with
:meth:`FakeServer.push` and consumed one per generate call, in order:
``"429"`` / ``"429:1"`` (with ``Retry-After: 1``), ``"500"``, ``"400"``, ``"400echo"`` (a 400
whose message echoes the request's credentials, as a careless proxy would), ``"sleep:S"``
(delay S seconds, then answer normally), ``"malformed"``, ``"wrong_ids"``, ``"nonbinary"``.
Every generate call is recorded in ``calls`` (path, headers, body, ``marker`` = the first
``RESP-<n>`` found in the prompt); every request of any kind, routed or not, in
``requests`` (method, path, headers). Run as a script to serve from another process::

    python tests/integration/fake_servers.py --port 0 --delay 0.5
"""

from __future__ import annotations

import argparse
import email.parser
import json
import re
import threading
import time
import uuid
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Optional

MARKER = re.compile(r"RESP-\d+")


def _find_ids(obj) -> list[str]:
    """The enum of the ``constraint_id`` property anywhere in a request body."""
    if isinstance(obj, dict):
        props = obj.get("properties")
        if isinstance(props, dict) and isinstance(props.get("constraint_id"), dict):
            return list(props["constraint_id"].get("enum", []))
        for v in obj.values():
            found = _find_ids(v)
            if found:
                return found
    elif isinstance(obj, list):
        for v in obj:
            found = _find_ids(v)
            if found:
                return found
    return []


def _prompt_text(body: dict) -> str:
    if "messages" in body:
        return "\n".join(str(m.get("content", "")) for m in body["messages"])
    parts = []
    for c in body.get("contents", []):
        parts += [p.get("text", "") for p in c.get("parts", [])]
    si = body.get("systemInstruction") or {}
    parts += [p.get("text", "") for p in si.get("parts", [])]
    return "\n".join(parts)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    allow_reuse_address = True

    def handle_error(self, request, client_address):  # a client that timed out and left
        pass


class FakeServer:
    def __init__(
        self,
        *,
        delay: float = 0.0,
        labeler: Optional[Callable] = None,
        batch_fail_every: int = 0,
        batch_polls: int = 1,
        port: int = 0,
    ):
        self.delay = delay
        self.labeler = labeler or (lambda ids, prompt: {i: 1 for i in ids})
        self.batch_fail_every = batch_fail_every  # every n-th batch line fails (0: none)
        self.batch_polls = batch_polls  # polls answered "running" before a batch completes
        self.script: deque = deque()
        self.calls: list[dict] = []
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self.httpd = _Server(("127.0.0.1", port), self._handler())
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    # --- lifecycle -------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def start(self) -> "FakeServer":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def push(self, *directives: str) -> None:
        self.script.extend(directives)

    def markers(self) -> list[str]:
        with self.lock:
            return [c["marker"] for c in self.calls]

    # --- answers ---------------------------------------------------------------------
    def _verdicts(self, body: dict, fault: str = "") -> str:
        ids = _find_ids(body)
        labels = self.labeler(ids, _prompt_text(body))
        entries = [{"constraint_id": i, "rationale": f"checked {i}", "label": labels[i]} for i in ids]
        if fault == "malformed":
            return '{"verdicts": [ {"constraint_id": '
        if fault == "wrong_ids":
            entries = entries[:-1] + [{"constraint_id": "c99", "rationale": "?", "label": 1}]
        if fault == "nonbinary":
            entries[0]["label"] = 2
        return json.dumps({"verdicts": entries})

    @staticmethod
    def _openai_body(model: str, text: str) -> dict:
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": text, "refusal": None},
                }
            ],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
        }

    @staticmethod
    def _gemini_body(text: str) -> dict:
        return {
            "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 120},
        }

    def _batch_line_fails(self, n: int) -> bool:
        return self.batch_fail_every > 0 and n % self.batch_fail_every == 0

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _send(
                self,
                status: int,
                obj=None,
                *,
                raw: Optional[bytes] = None,
                headers: Optional[dict] = None,
                ctype: str = "application/json",
            ):
                data = raw if raw is not None else json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> bytes:
                n = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(n) if n else b""

            def _error(self, status: int, gemini: bool, headers=None, echo: bool = False):
                msg = f"fake error {status}"
                if echo:
                    msg += f" for credentials {self.headers.get('Authorization') or self.headers.get('x-goog-api-key')}"
                if gemini:
                    obj = {"error": {"code": status, "message": msg, "status": "FAKE"}}
                else:
                    obj = {"error": {"message": msg, "type": "fake", "code": None}}
                self._send(status, obj, headers=headers)

            def _generate(self, body: dict, gemini: bool, model: str):
                with server.lock:
                    fault = server.script.popleft() if server.script else ""
                    server.calls.append(
                        {
                            "path": self.path,
                            "headers": dict(self.headers),
                            "body": body,
                            "marker": (MARKER.findall(_prompt_text(body)) or [""])[0],
                        }
                    )
                delay = server.delay
                if fault.startswith("sleep:"):
                    delay, fault = float(fault.split(":")[1]), ""
                if fault[:3].isdigit():
                    status = int(fault[:3])
                    headers = {"Retry-After": fault.split(":")[1]} if ":" in fault else None
                    return self._error(status, gemini, headers, echo=fault.endswith("echo"))
                if delay:
                    time.sleep(delay)
                text = server._verdicts(body, fault)
                self._send(200, server._gemini_body(text) if gemini else server._openai_body(model, text))

            def _record(self):
                with server.lock:
                    server.requests.append({"method": self.command, "path": self.path, "headers": dict(self.headers)})

            def do_POST(self):
                self._record()
                raw = self._body()
                path = self.path.split("?")[0]
                if path == "/v1/chat/completions":
                    body = json.loads(raw)
                    return self._generate(body, False, body.get("model", ""))
                m = re.fullmatch(r"/(v1|v1beta)/models/([^:]+):generateContent", path)
                if m:
                    return self._generate(json.loads(raw), True, m.group(2))
                if path == "/v1/files":
                    return self._upload(raw)
                if path == "/v1/batches":
                    return self._create_openai_batch(json.loads(raw))
                m = re.fullmatch(r"/(v1|v1beta)/models/([^:]+):batchGenerateContent", path)
                if m:
                    return self._create_gemini_batch(json.loads(raw), m.group(2))
                self._send(404, {"error": {"message": f"no route {path}"}})

            def do_GET(self):
                self._record()
                path = self.path.split("?")[0]
                m = re.fullmatch(r"/v1/files/([^/]+)/content", path)
                if m and m.group(1) in server.files:
                    return self._send(200, raw=server.files[m.group(1)], ctype="application/octet-stream")
                m = re.fullmatch(r"/v1/batches/([^/]+)", path)
                if m and m.group(1) in server.batches:
                    return self._send(200, server._poll(m.group(1)))
                m = re.fullmatch(r"/(v1|v1beta)/batches/([^/]+)", path)
                if m and m.group(2) in server.batches:
                    return self._send(200, server._poll(m.group(2)))
                self._send(404, {"error": {"message": f"no route {path}"}})

            # --- OpenAI batch ---
            def _upload(self, raw: bytes):
                msg = email.parser.BytesParser().parsebytes(
                    b"Content-Type: " + self.headers["Content-Type"].encode() + b"\r\n\r\n" + raw
                )
                content = b""
                for part in msg.walk():
                    if part.get_param("name", header="content-disposition") == "file":
                        content = part.get_payload(decode=True)
                fid = f"file-{uuid.uuid4().hex[:10]}"
                server.files[fid] = content
                self._send(
                    200,
                    {
                        "id": fid,
                        "object": "file",
                        "bytes": len(content),
                        "created_at": int(time.time()),
                        "filename": "judge-requests.jsonl",
                        "purpose": "batch",
                        "status": "processed",
                    },
                )

            def _create_openai_batch(self, body: dict):
                bid = f"batch_{uuid.uuid4().hex[:10]}"
                out, err = [], []
                lines = server.files[body["input_file_id"]].decode().splitlines()
                for n, line in enumerate((ln for ln in lines if ln.strip()), 1):
                    req = json.loads(line)
                    with server.lock:
                        server.calls.append(
                            {
                                "path": "batch",
                                "headers": {},
                                "body": req["body"],
                                "marker": (MARKER.findall(_prompt_text(req["body"])) or [""])[0],
                            }
                        )
                    if server._batch_line_fails(n):
                        err.append(
                            {
                                "id": f"r{n}",
                                "custom_id": req["custom_id"],
                                "response": {
                                    "status_code": 500,
                                    "request_id": "x",
                                    "body": {"error": {"message": "fake line failure"}},
                                },
                                "error": None,
                            }
                        )
                        continue
                    text = server._verdicts(req["body"])
                    out.append(
                        {
                            "id": f"r{n}",
                            "custom_id": req["custom_id"],
                            "error": None,
                            "response": {
                                "status_code": 200,
                                "request_id": "x",
                                "body": server._openai_body(req["body"]["model"], text),
                            },
                        }
                    )
                ofid, efid = f"file-{uuid.uuid4().hex[:10]}", f"file-{uuid.uuid4().hex[:10]}"
                server.files[ofid] = "\n".join(json.dumps(o) for o in out).encode()
                server.files[efid] = "\n".join(json.dumps(e) for e in err).encode()
                server.batches[bid] = {
                    "kind": "openai",
                    "polls": 0,
                    "obj": {
                        "id": bid,
                        "object": "batch",
                        "endpoint": body["endpoint"],
                        "input_file_id": body["input_file_id"],
                        "completion_window": body["completion_window"],
                        "created_at": int(time.time()),
                        "status": "validating",
                        "output_file_id": ofid if out else None,
                        "error_file_id": efid if err else None,
                        "request_counts": {"total": len(out) + len(err), "completed": len(out), "failed": len(err)},
                    },
                }
                self._send(200, {**server.batches[bid]["obj"], "output_file_id": None, "error_file_id": None})

            # --- Gemini batch ---
            def _create_gemini_batch(self, body: dict, model: str):
                bid = uuid.uuid4().hex[:10]
                reqs = body["batch"]["inputConfig"]["requests"]["requests"]
                inlined = []
                for n, r in enumerate(reqs, 1):
                    with server.lock:
                        server.calls.append(
                            {
                                "path": "batch",
                                "headers": {},
                                "body": r["request"],
                                "marker": (MARKER.findall(_prompt_text(r["request"])) or [""])[0],
                            }
                        )
                    if server._batch_line_fails(n):
                        inlined.append(
                            {"error": {"code": 13, "message": "fake line failure"}, "metadata": r.get("metadata")}
                        )
                    else:
                        inlined.append(
                            {
                                "response": server._gemini_body(server._verdicts(r["request"])),
                                "metadata": r.get("metadata"),
                            }
                        )
                server.batches[bid] = {
                    "kind": "gemini",
                    "polls": 0,
                    "obj": {
                        "name": f"batches/{bid}",
                        "metadata": {
                            "@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
                            "model": f"models/{model}",
                            "state": "BATCH_STATE_PENDING",
                            "output": {"inlinedResponses": {"inlinedResponses": inlined}},
                        },
                    },
                }
                obj = json.loads(json.dumps(server.batches[bid]["obj"]))
                del obj["metadata"]["output"]
                self._send(200, obj)

        return Handler

    def _poll(self, bid: str) -> dict:
        b = self.batches[bid]
        b["polls"] += 1
        done = b["polls"] > self.batch_polls
        obj = json.loads(json.dumps(b["obj"]))
        if b["kind"] == "openai":
            if done:
                obj["status"] = "completed"
            else:
                obj.update(status="in_progress", output_file_id=None, error_file_id=None)
        else:
            if done:
                obj["metadata"]["state"] = "BATCH_STATE_SUCCEEDED"
            else:
                obj["metadata"]["state"] = "BATCH_STATE_RUNNING"
                del obj["metadata"]["output"]
        return obj


def seed_project(engine, *, responses: int, constraints: int = 3, baseline: int = 0) -> dict:
    """Fixture rows written directly with the SQLModel models: one question and one
    instruction per response (``constraints`` constraints each, alternating
    require/forbid), response texts carrying the marker ``RESP-<n>``; ``baseline``
    baseline responses. Returns ``{"responses": [ids], "constraints": n, "baseline": [ids]}``."""
    from sqlmodel import Session

    from db.models import Constraint, EvalModel, Instruction, Question, Response

    out = {"responses": [], "constraints": 0, "baseline": []}
    with Session(engine) as s:
        m = EvalModel(name="secret-model-name-XYZ", provider="acme")
        s.add(m)
        s.flush()
        for n in range(1, responses + 1):
            q = Question(key=f"q{n}", text=f"Question {n}?")
            s.add(q)
            s.flush()
            ins = Instruction(key=f"q{n}-v1", question_id=q.id, text=f"Answer question {n} with formatting.")
            s.add(ins)
            s.flush()
            for p in range(1, constraints + 1):
                s.add(
                    Constraint(
                        instruction_id=ins.id,
                        position=p,
                        feature=f"feat{p}",
                        category="cat",
                        mode="require" if p % 2 else "forbid",
                        text=f"Constraint {p}.",
                        acceptance=f"criteria {p}",
                    )
                )
                out["constraints"] += 1
            r = Response(
                model_id=m.id,
                question_id=q.id,
                instruction_id=ins.id,
                variant=ins.key,
                kind="constrained",
                text=f"RESP-{n} - item a\n- item b",
            )
            s.add(r)
            s.flush()
            out["responses"].append(r.id)
            if n <= baseline:
                b = Response(model_id=m.id, question_id=q.id, variant="", kind="baseline", text=f"RESP-{n} baseline")
                s.add(b)
                s.flush()
                out["baseline"].append(b.id)
        s.commit()
    return out


def main() -> None:  # pragma: no cover - used by the bench and the kill/resume test
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--delay", type=float, default=0.0)
    args = ap.parse_args()
    srv = FakeServer(delay=args.delay, port=args.port).start()
    print(srv.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        srv.stop()


if __name__ == "__main__":
    main()
