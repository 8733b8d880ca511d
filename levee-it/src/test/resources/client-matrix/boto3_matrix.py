"""boto3 (Debian's python3-boto3) in the client matrix of ClientMatrixIT: every operation once, then the
over-quota probe. Default retry settings; only what a user must set for a local endpoint (endpoint,
path-style addressing, region, keys). Prints one tab-separated line per result (see ClientMatrixIT)."""
import concurrent.futures
import http.client
import os
import sys
import threading
import urllib.parse

import boto3
import botocore
from boto3.s3.transfer import TransferConfig
from botocore.config import Config

EP, BUCKET, TIGHT, P = os.environ["EP"], os.environ["BUCKET"], os.environ["TIGHT"], os.environ["PREFIX"]
s3 = boto3.client("s3", endpoint_url=EP, region_name="us-east-1", aws_access_key_id=os.environ["AK"],
                  aws_secret_access_key=os.environ["SK"], config=Config(s3={"addressing_style": "path"}))
DATA = bytes((i * 7 + 3) % 251 for i in range(100_000))


OUT = threading.Lock()


def out(*fields):
    """One whole line at a time: the probe's threads print at once (print() may interleave their lines)."""
    line = "\t".join(str(f).replace("\t", " ").replace("\n", " ") for f in fields) + "\n"
    with OUT:
        sys.stdout.write(line)
        sys.stdout.flush()


def cell(op, fn):
    try:
        detail = fn()
        out("CELL", op, "ok", detail or "")
    except Exception as e:  # every failure is a cell
        out("CELL", op, "fail", f"{type(e).__name__}: {e}"[:300])


def put():
    s3.put_object(Bucket=BUCKET, Key=P + "a", Body=DATA)


def multipart():
    big = bytes(9 * 1024 * 1024)  # above the default multipart_threshold (8 MiB)
    import io
    s3.upload_fileobj(io.BytesIO(big), BUCKET, P + "mp", Config=TransferConfig())
    n = s3.head_object(Bucket=BUCKET, Key=P + "mp")
    assert n["ContentLength"] == len(big), n["ContentLength"]
    assert "-" in n["ETag"], "not a multipart ETag: " + n["ETag"]
    return "2 parts (TransferConfig defaults)"


def checksum():
    r = s3.put_object(Bucket=BUCKET, Key=P + "ck", Body=DATA, ChecksumAlgorithm="CRC32")
    return "botocore " + botocore.__version__ + ": over http the CRC32 goes in a header, aws-chunked trailers only over https"


def get_range():
    body = s3.get_object(Bucket=BUCKET, Key=P + "a", Range="bytes=10-99")["Body"].read()
    assert body == DATA[10:100], f"{len(body)} bytes, not bytes 10-99"


def head():
    r = s3.head_object(Bucket=BUCKET, Key=P + "a")
    assert r["ContentLength"] == len(DATA)


def lst():
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=P).get("Contents", [])]
    assert P + "a" in keys, keys


def copy():
    s3.copy_object(Bucket=BUCKET, Key=P + "copy", CopySource={"Bucket": BUCKET, "Key": P + "a"})
    assert s3.get_object(Bucket=BUCKET, Key=P + "copy")["Body"].read() == DATA


def send(method, url, body=None):
    """Sends a presigned request with no header of its own (urllib would add a Content-Type, which SigV2 signs)."""
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    c.request(method, u.path + "?" + u.query, body=body)
    r = c.getresponse()
    return r.status, r.read()


def kind(url):
    return "SigV2 query string (AWSAccessKeyId=)" if "AWSAccessKeyId=" in url else "SigV4 query string"


def presign_get():
    url = s3.generate_presigned_url("get_object", Params={"Bucket": BUCKET, "Key": P + "a"}, ExpiresIn=600)
    status, body = send("GET", url)
    assert status == 200 and body == DATA, f"{kind(url)}: HTTP {status} {body[:200]!r}"
    return kind(url)


def presign_put():
    url = s3.generate_presigned_url("put_object", Params={"Bucket": BUCKET, "Key": P + "pp"}, ExpiresIn=600)
    status, body = send("PUT", url, DATA[:1000])
    assert status == 200, f"{kind(url)}: HTTP {status} {body[:200]!r}"
    assert s3.get_object(Bucket=BUCKET, Key=P + "pp")["Body"].read() == DATA[:1000]
    return kind(url)


def delete():
    s3.delete_object(Bucket=BUCKET, Key=P + "copy")
    try:
        s3.head_object(Bucket=BUCKET, Key=P + "copy")
        raise AssertionError("still there after DELETE")
    except botocore.exceptions.ClientError as e:
        if e.response["Error"]["Code"] not in ("404", "NoSuchKey", "NotFound"):
            raise


THROTTLE_CODES = {"SlowDown", "Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequestsException"}


def probe(method, key):
    try:
        if method == "HEAD":
            s3.head_object(Bucket=TIGHT, Key=key)
        else:
            s3.get_object(Bucket=TIGHT, Key=key)["Body"].read()
        out("PROBE", method, key, "ok", "", "")
    except botocore.exceptions.ClientError as e:
        code = e.response.get("Error", {}).get("Code", "")
        attempts = e.response.get("ResponseMetadata", {}).get("RetryAttempts", 0) + 1
        out("PROBE", method, key, "error", "throttle" if code in THROTTLE_CODES else "other",
            f"code {code}, {attempts} attempts: {e}"[:200])
    except Exception as e:
        out("PROBE", method, key, "error", "other", f"{type(e).__name__}: {e}"[:200])


if __name__ == "__main__":
    out("VERSION", "boto3 " + boto3.__version__ + " / botocore " + botocore.__version__)
    if sys.argv[1:] == ["ops"]:
        for op, fn in [("put", put), ("put-multipart", multipart), ("put-checksum", checksum), ("get-range", get_range),
                       ("head", head), ("list", lst), ("copy", copy), ("presigned-get", presign_get),
                       ("presigned-put", presign_put), ("delete", delete)]:
            cell(op, fn)
    else:
        for method in ("HEAD", "GET"):
            n = int(os.environ["PROBES"])
            with concurrent.futures.ThreadPoolExecutor(n) as ex:
                list(ex.map(lambda i: probe(method, f"{method.lower()}{i}"), range(n)))
