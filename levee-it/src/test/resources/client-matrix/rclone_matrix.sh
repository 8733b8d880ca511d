#!/usr/bin/env bash
# rclone (Debian) in the client matrix of ClientMatrixIT: every operation once ("ops"), or the over-quota
# probe. Default retry settings (--retries 3, --low-level-retries 10); the remote is configured from the
# environment (provider Other, path style). Prints tab-separated lines (see ClientMatrixIT).
set -u
export RCLONE_CONFIG=/dev/null RCLONE_CONFIG_LV_TYPE=s3 RCLONE_CONFIG_LV_PROVIDER=Other RCLONE_CONFIG_LV_ENDPOINT="$EP"
export RCLONE_CONFIG_LV_ACCESS_KEY_ID="$AK" RCLONE_CONFIG_LV_SECRET_ACCESS_KEY="$SK" RCLONE_CONFIG_LV_REGION=us-east-1
export RCLONE_CONFIG_LV_FORCE_PATH_STYLE=true
W="$WORK"; mkdir -p "$W"
R() { rclone "$@"; }
. "$(dirname "$0")/matrix_common.sh"
python3 -c 'import sys; sys.stdout.buffer.write(bytes((i * 7 + 3) % 251 for i in range(100000)))' >"$W/data"
head -c $((6 * 1024 * 1024)) /dev/zero >"$W/big"
printf 'VERSION\t%s\n' "$(rclone version | head -1)"
if [ "${1:-}" = ops ]; then
  cell put R copyto "$W/data" "lv:$BUCKET/${PREFIX}a"
  DETAIL="--s3-upload-cutoff 5Mi --s3-chunk-size 5Mi (default cutoff 200 MiB)"
  cell put-multipart bash -c 'rclone copyto --s3-upload-cutoff 5Mi --s3-chunk-size 5Mi "$0" "lv:$BUCKET/${PREFIX}mp" &&
    rclone lsjson --stat --hash "lv:$BUCKET/${PREFIX}mp" | grep -q "\"Size\": *6291456"' "$W/big"
  printf 'CELL\tput-checksum\tna\t%s\n' "rclone $(rclone version | head -1 | cut -d' ' -f2) sends no aws-chunked uploads (Content-MD5 / x-amz-meta-md5chksum)"
  cell get-range bash -c 'rclone cat --offset 10 --count 90 "lv:$BUCKET/${PREFIX}a" >"$0.range" && cmp -s "$0.range" <(tail -c +11 "$0" | head -c 90) ||
    { echo "range differs" >&2; exit 1; }' "$W/data"
  DETAIL="rclone lsjson --stat of one object"
  cell head bash -c 'rclone lsjson --stat "lv:$BUCKET/${PREFIX}a" | grep -q "\"Size\": *100000" || { echo "not the object: $(rclone lsjson --stat "lv:$BUCKET/${PREFIX}a")" >&2; exit 1; }'
  cell list bash -c 'rclone lsf "lv:$BUCKET/$PREFIX" | grep -qx a || { echo "not listed" >&2; exit 1; }'
  DETAIL="rclone copyto between two S3 paths (server-side copy)"
  cell copy bash -c 'rclone copyto "lv:$BUCKET/${PREFIX}a" "lv:$BUCKET/${PREFIX}copy" && rclone cat "lv:$BUCKET/${PREFIX}copy" | cmp -s - "$0"' "$W/data"
  DETAIL="rclone link, fetched with curl"
  cell presigned-get bash -c 'u=$(rclone link "lv:$BUCKET/${PREFIX}a") && fetch "$u" "$0.pg" && cmp -s "$0" "$0.pg"' "$W/data"
  printf 'CELL\tpresigned-put\tna\trclone presigns GET only (rclone link)\n'
  cell delete bash -c 'rclone deletefile "lv:$BUCKET/${PREFIX}copy" && ! rclone lsf "lv:$BUCKET/$PREFIX" | grep -qx copy'
else
  probe() {
    local err
    if [ "$1" = HEAD ]; then err=$(R lsjson --stat -vv "lv:$TIGHT/$2" 2>&1 >/dev/null)
    else err=$(R cat -vv "lv:$TIGHT/$2" 2>&1 >/dev/null); fi
    local rc=$?
    local tries; tries=$(echo "$err" | grep -ci "retry\|pacer: low level retry")
    if [ $rc = 0 ]; then printf 'PROBE\t%s\t%s\tok\t\t%s retry lines\n' "$1" "$2" "$tries"; else
      case "$err" in *SlowDown*|*"Slow Down"*|*Throttl*) c=throttle ;; *) c=other ;; esac
      printf 'PROBE\t%s\t%s\terror\t%s\t%s\n' "$1" "$2" "$c" "$(echo "$err" | grep -i "error\|fail" | tail -2 | tr '\n\t' '  ' | cut -c1-200)"; fi
  }
  for m in HEAD GET; do
    for i in $(seq 0 $((PROBES - 1))); do probe $m "$(echo $m | tr A-Z a-z)$i" >"$W/probe$m$i" & done
    wait; cat "$W"/probe$m*
  done
fi
