#!/usr/bin/env python3
"""Drives a syncd listener through couchdb3, a third-party CouchDB client from PyPI.

Usage: couchdb3_client_test.py URL [--user NAME --password PASSWORD]

URL is the listener's base URL (credentials may also be given in it, as
http://name:password@127.0.0.1:5984). Covers create, read, update, delete,
bulk, changes (normal, filtered and continuous) and attachments, and exits
non-zero on the first failure.
"""
import argparse
import sys
import threading
import time
import traceback
import uuid

import couchdb3
from couchdb3 import exceptions


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def run(url, user, password):
    server = couchdb3.Server(url, user=user, password=password, auth_method="cookie" if user else "basic")
    check(server.up(), "server is up")
    name = "pytest-" + uuid.uuid4().hex[:12]
    db = server.create(name)
    try:
        check(name in server.all_dbs(), "new database listed in _all_dbs")
        check(db.info()["doc_count"] == 0, "empty database")

        # Create, read, update, delete.
        doc_id, ok, rev1 = db.save({"_id": "alpha", "kind": "note", "n": 1})
        check(ok and doc_id == "alpha" and rev1.startswith("1-"), "save creates the first revision")
        doc = db.get("alpha")
        check(doc["n"] == 1 and doc["_rev"] == rev1, "get reads the document")
        doc["n"] = 2
        _, ok, rev2 = db.save(doc)
        check(ok and rev2.startswith("2-"), "save with _rev updates")
        try:
            db.save({"_id": "alpha", "_rev": rev1, "n": 3})
            raise AssertionError("a stale revision must conflict")
        except exceptions.ConflictError:
            pass
        new_id, ok, _ = db.create({"kind": "generated"})
        check(ok and len(new_id) == 32, "create (POST) makes an id")
        check(db.rev("alpha") == rev2, "rev (HEAD) reads the ETag")
        check("alpha" in db, "contains (HEAD)")
        check(db.delete(new_id, db.rev(new_id)), "delete")
        check(new_id not in db, "deleted document is gone")
        check(db.get(new_id, check=False, default_value="gone") == "gone", "missing document default")

        # Bulk.
        results = db.bulk_docs([{"_id": "b%02d" % i, "kind": "bulk" if i % 2 else "other", "i": i} for i in range(20)])
        check(len(results) == 20 and all(r.get("ok") for r in results), "bulk_docs writes every document")
        fetched = db.bulk_get([{"id": "b03"}, {"id": "b04", "rev": results[4]["rev"]}], revs=True)
        docs = fetched  # couchdb3 answers the "results" list
        check(docs[0]["docs"][0]["ok"]["i"] == 3, "bulk_get by id")
        check(docs[1]["docs"][0]["ok"]["_revisions"]["start"] == 1, "bulk_get with revs")
        listing = db.all_docs(include_docs=True)
        check(listing.total_rows == 21, "all_docs counts live documents, not %r" % listing.total_rows)
        rows = listing.rows
        check([row.id for row in rows][:2] == ["alpha", "b00"], "all_docs in id order")
        check(rows[0].doc["n"] == 2, "all_docs include_docs")
        keyed = db.all_docs(keys=["b05", "nope"])
        check(keyed.rows[0].id == "b05", "all_docs with keys")

        # Changes.
        changes = db.changes()
        ids = [row["id"] for row in changes["results"]]
        check("alpha" in ids and new_id in ids and len(ids) == 22, "normal changes feed")
        deleted = [row for row in changes["results"] if row["id"] == new_id][0]
        check(deleted.get("deleted") is True, "deletion in the feed")
        last_seq = changes["last_seq"]
        page = db.changes(limit=5, include_docs=True, style="all_docs")
        check(len(page["results"]) == 5 and "doc" in page["results"][0], "limit and include_docs")
        by_ids = db.changes(doc_ids=["b01", "b02"])
        check(sorted(r["id"] for r in by_ids["results"]) == ["b01", "b02"], "filter=_doc_ids")
        selected = db.changes(selector={"kind": "bulk"})
        check(len(selected["results"]) == 10, "filter=_selector")
        empty = db.changes(since=last_seq)
        check(empty["results"] == [], "nothing since last_seq")

        seen = []

        def write_later():
            time.sleep(0.3)
            db.save({"_id": "live", "n": 1})

        writer = threading.Thread(target=write_later)
        writer.start()
        with db.changes_stream(since=last_seq, heartbeat=1000) as stream:
            for change in stream:
                seen.append(change)
                if change.get("id") == "live":
                    break
        writer.join()
        check(seen and seen[-1]["id"] == "live", "continuous feed delivers a new write")

        # Attachments.
        content = bytes(range(256)) * 4096
        _, ok, arev = db.put_attachment("alpha", "blob.bin", content=content, content_type="application/octet-stream", rev=db.rev("alpha"))
        check(ok and arev.startswith("3-"), "put_attachment")
        attachment = db.get_attachment("alpha", "blob.bin")
        check(attachment.content == content, "get_attachment returns the same bytes")
        check(attachment.content_type == "application/octet-stream", "attachment content type")
        stub = db.get("alpha")["_attachments"]["blob.bin"]
        check(stub["length"] == len(content) and stub.get("stub"), "attachment stub in the document")
        inline = db.get("alpha", attachments=True)["_attachments"]["blob.bin"]
        check("data" in inline, "attachments=true inlines the data")
        check(db.delete_attachment("alpha", "blob.bin", arev), "delete_attachment")
        check("_attachments" not in db.get("alpha"), "attachment removed")

        # Local documents are not listed.
        db.save({"_id": "_local/checkpoint", "seq": 1})
        check(db.get("_local/checkpoint")["seq"] == 1, "local document")
    finally:
        server.delete(name)
    check(name not in server.all_dbs(), "database deleted")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("--user")
    parser.add_argument("--password")
    arguments = parser.parse_args()
    try:
        run(arguments.url, arguments.user, arguments.password)
    except Exception as error:  # any failure, including the client's own errors
        traceback.print_exc()
        print("FAIL: %s: %s" % (type(error).__name__, error), file=sys.stderr)
        return 1
    print("couchdb3 client test passed against %s" % arguments.url.split("@")[-1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
