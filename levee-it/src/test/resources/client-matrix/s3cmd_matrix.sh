#!/usr/bin/env bash
# s3cmd (Debian) in the client matrix of ClientMatrixIT: every operation once ("ops"), or the over-quota
# probe. Default retry settings; a config file with the endpoint (path style, http, SigV4) and keys.
# Prints tab-separated lines (see ClientMatrixIT).
set -u
W="$WORK"; mkdir -p "$W"
HOSTPORT=${EP#http://}
cat >"$W/s3cfg" <<CFG
[default]
access_key = $AK
secret_key = $SK
host_base = $HOSTPORT
host_bucket = $HOSTPORT
use_https = False
signature_v2 = False
bucket_location = us-east-1
CFG
S() { s3cmd -c "$W/s3cfg" "$@"; }
export -f S; export W
. "$(dirname "$0")/matrix_common.sh"
python3 -c 'import sys; sys.stdout.buffer.write(bytes((i * 7 + 3) % 251 for i in range(100000)))' >"$W/data"
head -c $((6 * 1024 * 1024)) /dev/zero >"$W/big"
printf 'VERSION\t%s\n' "$(s3cmd --version)"
if [ "${1:-}" = ops ]; then
  cell put S put -q "$W/data" "s3://$BUCKET/${PREFIX}a"
  DETAIL="--multipart-chunk-size-mb=5 (default 15)"
  cell put-multipart bash -c 'S put -q --multipart-chunk-size-mb=5 "$W/big" "s3://$BUCKET/${PREFIX}mp" && S info "s3://$BUCKET/${PREFIX}mp" | grep -q "MD5 sum:.*-\|ETag.*-\|6291456"'
  printf 'CELL\tput-checksum\tna\t%s\n' "$(s3cmd --version) sends no aws-chunked uploads (signed payload hash)"
  printf 'CELL\tget-range\tna\ts3cmd has no ranged GET\n'
  DETAIL="s3cmd info (HEAD, then GET ?acl)"
  cell head S info "s3://$BUCKET/${PREFIX}a"
  cell list bash -c 'S ls "s3://$BUCKET/$PREFIX" | grep -q "/${PREFIX}a$" || { echo "not listed" >&2; exit 1; }'
  cell copy bash -c 'S cp -q "s3://$BUCKET/${PREFIX}a" "s3://$BUCKET/${PREFIX}copy" && S get -q --force "s3://$BUCKET/${PREFIX}copy" "$W/copy" && cmp -s "$W/data" "$W/copy"'
  DETAIL="s3cmd signurl (SigV2 query string), fetched with curl"
  cell presigned-get bash -c 'u=$(S signurl "s3://$BUCKET/${PREFIX}a" +600) && fetch "$u" "$W/pg" && cmp -s "$W/data" "$W/pg"'
  printf 'CELL\tpresigned-put\tna\ts3cmd presigns GET only (signurl)\n'
  cell delete bash -c 'S del -q "s3://$BUCKET/${PREFIX}copy" && ! S info "s3://$BUCKET/${PREFIX}copy" >/dev/null 2>&1'
else
  probe() {
    local err
    if [ "$1" = HEAD ]; then err=$(S info "s3://$TIGHT/$2" 2>&1 >/dev/null)
    else err=$(S get --force "s3://$TIGHT/$2" "$W/$2" 2>&1 >/dev/null); fi
    local rc=$?
    local tries; tries=$(echo "$err" | grep -c "Retrying")
    if [ $rc = 0 ]; then printf 'PROBE\t%s\t%s\tok\t\t%s retries\n' "$1" "$2" "$tries"; else
      case "$err" in *SlowDown*|*"Slow Down"*) c=throttle ;; *) c=other ;; esac
      printf 'PROBE\t%s\t%s\terror\t%s\t%s\n' "$1" "$2" "$c" "$(echo "$err" | grep -v '^$' | tail -2 | tr '\n\t' '  ' | cut -c1-200)"; fi
  }
  for m in HEAD GET; do
    for i in $(seq 0 $((PROBES - 1))); do probe $m "$(echo $m | tr A-Z a-z)$i" >"$W/probe$m$i" & done
    wait; cat "$W"/probe$m*
  done
fi
