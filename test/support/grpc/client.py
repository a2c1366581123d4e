# A real Python grpcio client for the gateway tests (run with /usr/bin/python3, Debian's python3-grpcio; the
# proxy comes from grpc_proxy, as a user sets it). argv[1]: JSON {target, caFile, calls: [{kind, text, n, texts,
# metadata}]}; each call's outcome is one JSON line on stdout. Messages are credgate.test.Msg (echo.proto),
# encoded by hand: no generated stubs are needed for generic calls.
import json
import sys

import grpc


def encode(text, n):
    raw = text.encode("utf-8")
    out = b"\x0a" + varint(len(raw)) + raw
    if n:
        out += b"\x10" + varint(n & 0xFFFFFFFFFFFFFFFF)
    return out


def varint(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def decode(data):
    msg = {"text": "", "n": 0}
    i = 0
    while i < len(data):
        key = data[i]
        i += 1
        v, shift = 0, 0
        while True:
            b = data[i]
            i += 1
            v |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        if key == 0x0A:
            msg["text"] = data[i : i + v].decode("utf-8")
            i += v
        elif key == 0x10:
            msg["n"] = v
    return msg


def main():
    config = json.loads(sys.argv[1])
    with open(config["caFile"], "rb") as f:
        creds = grpc.ssl_channel_credentials(root_certificates=f.read())
    channel = grpc.secure_channel(config["target"], creds)
    stubs = {
        "unary": channel.unary_unary("/credgate.test.Echo/Unary", request_serializer=lambda m: m, response_deserializer=decode),
        "server": channel.unary_stream("/credgate.test.Echo/ServerStream", request_serializer=lambda m: m, response_deserializer=decode),
        "client": channel.stream_unary("/credgate.test.Echo/ClientStream", request_serializer=lambda m: m, response_deserializer=decode),
        "bidi": channel.stream_stream("/credgate.test.Echo/Bidi", request_serializer=lambda m: m, response_deserializer=decode),
    }
    for call in config["calls"]:
        kind = call["kind"]
        md = list((call.get("metadata") or {}).items())
        try:
            if kind == "unary":
                res, c = stubs[kind].with_call(encode(call["text"], call.get("n", 0)), metadata=md, timeout=20)
                out = {"ok": True, "res": res, "trailers": dict(c.trailing_metadata() or [])}
            elif kind == "server":
                it = stubs[kind](encode(call["text"], call.get("n", 0)), metadata=md, timeout=20)
                out = {"ok": True, "msgs": list(it), "trailers": dict(it.trailing_metadata() or [])}
            elif kind == "client":
                res, c = stubs[kind].with_call(iter([encode(t, 0) for t in call["texts"]]), metadata=md, timeout=20)
                out = {"ok": True, "res": res, "trailers": dict(c.trailing_metadata() or [])}
            else:
                it = stubs[kind](iter([encode(t, i) for i, t in enumerate(call["texts"])]), metadata=md, timeout=20)
                out = {"ok": True, "msgs": list(it), "trailers": dict(it.trailing_metadata() or [])}
        except grpc.RpcError as e:
            out = {"ok": False, "code": e.code().value[0], "details": e.details()}
        print(json.dumps(out), flush=True)
    channel.close()


main()
