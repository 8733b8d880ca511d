"""pytest plugin loaded beside ceph/s3-tests (unmodified) by scripts/s3-conformance.

Two things, nothing else:

1. Bucket cleanup without ListObjectVersions. The suite empties the buckets of each test, before
   and after it, by listing object versions (s3tests.functional.list_versions). The in-memory
   backend of `levee s3-backend` (S3Proxy) does not implement ListObjectVersions, so every
   cleanup would fail, its bucket would stay, and every later test would fail in setup. When the
   store answers ListObjectVersions with NotImplemented, the listing falls back to ListObjects
   pages (keys without version ids, which DeleteObjects accepts) after aborting the bucket's
   multipart uploads (a bucket with parts left is not empty to every store). A store that lists
   versions is cleaned as the suite does it.

2. One outcome per test, written to the file named by LEVEE_S3TESTS_OUTCOMES as lines
   "<outcome> <test id>": passed when setup, call and teardown all passed; skipped when any
   phase skipped (and none failed); failed otherwise (a failed cleanup fails the test, as pytest
   counts it an error). scripts/s3-conformance compares these files between paths.
"""

import os

import pytest
from botocore.exceptions import ClientError

_outcomes = {}


def _list_without_versions(client, bucket, batch_size):
    try:
        uploads = client.list_multipart_uploads(Bucket=bucket).get('Uploads', [])
    except ClientError:
        uploads = []
    for upload in uploads:
        try:
            client.abort_multipart_upload(Bucket=bucket, Key=upload['Key'], UploadId=upload['UploadId'])
        except ClientError:
            pass
    paginator = client.get_paginator('list_objects')
    for page in paginator.paginate(Bucket=bucket, PaginationConfig={'PageSize': batch_size}):
        keys = [{'Key': o['Key']} for o in page.get('Contents', [])]
        if keys:
            yield keys


def _patch_cleanup():
    import s3tests.functional as functional
    versioned = functional.list_versions

    def list_versions(client, bucket, batch_size):
        try:
            client.list_object_versions(Bucket=bucket, MaxKeys=1)
        except ClientError as e:
            if e.response.get('Error', {}).get('Code') == 'NotImplemented':
                yield from _list_without_versions(client, bucket, batch_size)
                return
            raise
        yield from versioned(client, bucket, batch_size)

    functional.list_versions = list_versions


def pytest_configure(config):
    _patch_cleanup()


@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report):
    previous = _outcomes.get(report.nodeid)
    if report.failed:
        outcome = 'failed'
    elif report.skipped:
        outcome = 'skipped'
    else:
        outcome = 'passed'
    rank = {'passed': 0, 'skipped': 1, 'failed': 2}
    if previous is None or rank[outcome] > rank[previous]:
        _outcomes[report.nodeid] = outcome


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get('LEVEE_S3TESTS_OUTCOMES')
    if not path:
        return
    with open(path, 'w', encoding='utf-8') as out:
        for nodeid in sorted(_outcomes):
            out.write('%s %s\n' % (_outcomes[nodeid], nodeid))
