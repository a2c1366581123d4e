# A psycopg2 (libpq) client for the database broker's tests (test/support/databaseClients.ts), run with Debian's
# /usr/bin/python3. argv[1] is JSON: {"url": libpq URL, "ops": [...]}; prints one JSON document:
# {"connectError": {"pgcode", "message"}} or {"results": [...]}, one result per op:
#   {"sql": text, "params"?: [...]}        -> {"rows", "status"} or {"error": {"pgcode", "message"}}
#   {"copyIn": COPY … FROM STDIN, "data"}   -> {"rowcount"} or {"error"}
#   {"copyOut": COPY … TO STDOUT}           -> {"data"} or {"error"}
#   {"listen": channel, "notifySql": text}  -> {"notifies": [[channel, payload], …]} (LISTEN, run notifySql on a
#                                              second connection, wait up to 10 s for the notification)
import io
import json
import select
import sys

import psycopg2

args = json.loads(sys.argv[1])


def err(e):
    return {"pgcode": e.pgcode, "message": (e.pgerror or str(e)).strip()}


try:
    conn = psycopg2.connect(args["url"])
except psycopg2.Error as e:
    print(json.dumps({"connectError": err(e)}))
    sys.exit(0)
conn.autocommit = True
results = []
for op in args["ops"]:
    cur = conn.cursor()
    try:
        if "sql" in op:
            cur.execute(op["sql"], op.get("params"))
            rows = cur.fetchall() if cur.description else None
            results.append({"rows": rows, "status": cur.statusmessage})
        elif "copyIn" in op:
            cur.copy_expert(op["copyIn"], io.StringIO(op["data"]))
            results.append({"rowcount": cur.rowcount})
        elif "copyOut" in op:
            out = io.StringIO()
            cur.copy_expert(op["copyOut"], out)
            results.append({"data": out.getvalue()})
        elif "listen" in op:
            cur.execute("LISTEN " + op["listen"])
            other = psycopg2.connect(args["url"])
            other.autocommit = True
            other.cursor().execute(op["notifySql"])
            other.close()
            got = []
            if select.select([conn], [], [], 10) != ([], [], []):
                conn.poll()
                got = [[n.channel, n.payload] for n in conn.notifies]
            results.append({"notifies": got})
    except psycopg2.Error as e:
        results.append({"error": err(e)})
print(json.dumps({"results": results}, default=str))
