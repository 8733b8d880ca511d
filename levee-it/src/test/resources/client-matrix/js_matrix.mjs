// AWS SDK for JavaScript v3 (@aws-sdk/client-s3, installed by ClientMatrixIT under target/) in the client
// matrix: every operation once, then the over-quota probe. Default retry settings; only what a user must set
// for a local endpoint (endpoint, path-style, region, keys). Prints tab-separated lines (see ClientMatrixIT).
import { createRequire } from "node:module";
import { Readable } from "node:stream";
const require = createRequire(process.env.NODE_DIR + "/");
const s3lib = require("@aws-sdk/client-s3");
const { getSignedUrl } = require("@aws-sdk/s3-request-presigner");
const { S3Client, PutObjectCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, CopyObjectCommand,
  DeleteObjectCommand, CreateMultipartUploadCommand, UploadPartCommand, CompleteMultipartUploadCommand } = s3lib;
const { EP, BUCKET, TIGHT, PREFIX: P, AK, SK } = process.env;
const s3 = new S3Client({ endpoint: EP, forcePathStyle: true, region: "us-east-1",
  credentials: { accessKeyId: AK, secretAccessKey: SK } });
const DATA = Buffer.from(Array.from({ length: 100000 }, (_, i) => (i * 7 + 3) % 251));
const out = (...f) => console.log(f.map((x) => String(x).replace(/[\t\n]/g, " ")).join("\t"));
const assert = (c, m) => { if (!c) throw new Error(m); };
const body = async (r) => Buffer.from(await r.Body.transformToByteArray());
let sentHeaders = {};
s3.middlewareStack.add((next) => async (args) => { sentHeaders = { ...args.request.headers }; return next(args); },
  { step: "finalizeRequest", name: "recordHeaders", priority: "low" });

const ops = {
  "put": async () => { await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: P + "a", Body: DATA })); },
  "put-multipart": async () => {
    const part = Buffer.alloc(5 * 1024 * 1024, 1);
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: P + "mp" }));
    const parts = [];
    for (const [n, b] of [[1, part], [2, DATA]]) {
      const r = await s3.send(new UploadPartCommand({ Bucket: BUCKET, Key: P + "mp", UploadId, PartNumber: n, Body: b }));
      parts.push({ ETag: r.ETag, PartNumber: n });
    }
    await s3.send(new CompleteMultipartUploadCommand({ Bucket: BUCKET, Key: P + "mp", UploadId, MultipartUpload: { Parts: parts } }));
    const h = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: P + "mp" }));
    assert(h.ContentLength === part.length + DATA.length, "length " + h.ContentLength);
    return "2 parts";
  },
  "put-checksum": async () => {
    // a stream body: the SDK's default CRC32 then goes as aws-chunked with a trailer
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: P + "ck", Body: Readable.from([DATA]), ContentLength: DATA.length }));
    const h = sentHeaders;
    assert((h["content-encoding"] || "").includes("aws-chunked"), "not aws-chunked: " + JSON.stringify(h));
    const got = await body(await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: P + "ck" })));
    assert(got.equals(DATA), "stored " + got.length + " bytes, not the 100000 sent");
    return `aws-chunked, ${h["x-amz-content-sha256"]}, trailer ${h["x-amz-trailer"]}`;
  },
  "get-range": async () => {
    const got = await body(await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: P + "a", Range: "bytes=10-99" })));
    assert(got.equals(DATA.subarray(10, 100)), got.length + " bytes, not bytes 10-99");
  },
  "head": async () => {
    const h = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: P + "a" }));
    assert(h.ContentLength === DATA.length, "length " + h.ContentLength);
  },
  "list": async () => {
    const r = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: P }));
    assert((r.Contents || []).some((o) => o.Key === P + "a"), "not listed");
  },
  "copy": async () => {
    await s3.send(new CopyObjectCommand({ Bucket: BUCKET, Key: P + "copy", CopySource: `${BUCKET}/${P}a` }));
    assert((await body(await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: P + "copy" })))).equals(DATA), "copy differs");
  },
  "presigned-get": async () => {
    const url = await getSignedUrl(s3, new GetObjectCommand({ Bucket: BUCKET, Key: P + "a" }), { expiresIn: 600 });
    const r = await fetch(url);
    const got = Buffer.from(await r.arrayBuffer());
    assert(r.status === 200, "HTTP " + r.status + " " + got.toString().slice(0, 200));
    assert(got.equals(DATA), "body differs");
  },
  "presigned-put": async () => {
    const url = await getSignedUrl(s3, new PutObjectCommand({ Bucket: BUCKET, Key: P + "pp" }), { expiresIn: 600 });
    const r = await fetch(url, { method: "PUT", body: DATA.subarray(0, 1000) });
    const text = await r.text();
    assert(r.status === 200, "HTTP " + r.status + " " + text.slice(0, 200));
    assert((await body(await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: P + "pp" })))).equals(DATA.subarray(0, 1000)), "stored body differs");
  },
  "delete": async () => {
    await s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: P + "copy" }));
    try {
      await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: P + "copy" }));
      throw new Error("still there after DELETE");
    } catch (e) {
      if (e.$metadata?.httpStatusCode !== 404) throw e;
    }
  },
};

const THROTTLE = new Set(["SlowDown", "Throttling", "ThrottlingException", "TooManyRequestsException", "RequestLimitExceeded"]);
async function probe(method, key) {
  try {
    if (method === "HEAD") await s3.send(new HeadObjectCommand({ Bucket: TIGHT, Key: key }));
    else await body(await s3.send(new GetObjectCommand({ Bucket: TIGHT, Key: key })));
    out("PROBE", method, key, "ok", "", "");
  } catch (e) {
    const throttle = e.$retryable?.throttling === true || THROTTLE.has(e.name) || e.$metadata?.httpStatusCode === 429;
    out("PROBE", method, key, "error", throttle ? "throttle" : "other",
      `name ${e.name}, status ${e.$metadata?.httpStatusCode}, ${e.$metadata?.attempts} attempts, ${e.$metadata?.totalRetryDelay} ms back-off`);
  }
}

const version = require(process.env.NODE_DIR + "/node_modules/@aws-sdk/client-s3/package.json").version;
out("VERSION", "@aws-sdk/client-s3 " + version + " / node " + process.version);
if (process.argv[2] === "ops") {
  for (const [op, fn] of Object.entries(ops)) {
    try {
      out("CELL", op, "ok", (await fn()) || "");
    } catch (e) {
      out("CELL", op, "fail", `${e.name}: ${e.message}`.slice(0, 300));
    }
  }
} else {
  for (const m of ["HEAD", "GET"]) {
    await Promise.all([...Array(Number(process.env.PROBES)).keys()].map((i) => probe(m, m.toLowerCase() + i)));
  }
}
