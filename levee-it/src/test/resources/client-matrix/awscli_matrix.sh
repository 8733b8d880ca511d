#!/usr/bin/env bash
# The AWS CLI (Debian's awscli, /usr/bin/aws) in the client matrix of ClientMatrixIT: every operation once
# ("ops"), or the over-quota probe. Default retry settings; the endpoint, region and keys come from the
# environment as a user sets them. Prints tab-separated lines (see ClientMatrixIT).
set -u
AWS=${AWS_BIN:-/usr/bin/aws}
export AWS_ACCESS_KEY_ID="$AK" AWS_SECRET_ACCESS_KEY="$SK" AWS_DEFAULT_REGION=us-east-1 AWS_CONFIG_FILE=/dev/null
export AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_PAGER=""
W="$WORK"; mkdir -p "$W"
a() { "$AWS" --endpoint-url "$EP" "$@"; }
. "$(dirname "$0")/matrix_common.sh"
cell_error() { cat; } # the AWS CLI's whole error
python3 -c 'import sys; sys.stdout.buffer.write(bytes((i * 7 + 3) % 251 for i in range(100000)))' >"$W/data"
head -c $((9 * 1024 * 1024)) /dev/zero >"$W/big"
printf 'VERSION\t%s\n' "$("$AWS" --version 2>&1)"
same() { cmp -s "$1" "$2" || { echo "$1 differs from $2" >&2; return 1; }; }
if [ "${1:-}" = ops ]; then
  cell put a s3api put-object --bucket "$BUCKET" --key "${PREFIX}a" --body "$W/data"
  DETAIL="aws s3 cp of 9 MiB (multipart_threshold 8 MiB)"
  cell put-multipart bash -c 'set -e; "$0" --endpoint-url "$EP" s3 cp "$1" "s3://$BUCKET/${PREFIX}mp" --only-show-errors
    "$0" --endpoint-url "$EP" s3api head-object --bucket "$BUCKET" --key "${PREFIX}mp" | grep -q "ETag.*-"' "$AWS" "$W/big"
  DETAIL="$("$AWS" --version | cut -d' ' -f1): --checksum-algorithm CRC32 goes in a header over http (no aws-chunked trailer)"
  cell put-checksum a s3api put-object --bucket "$BUCKET" --key "${PREFIX}ck" --body "$W/data" --checksum-algorithm CRC32
  cell get-range bash -c '"$0" --endpoint-url "$EP" s3api get-object --bucket "$BUCKET" --key "${PREFIX}a" --range bytes=10-99 "$1.range" >/dev/null &&
    cmp -s "$1.range" <(tail -c +11 "$1" | head -c 90) || { echo "range differs" >&2; exit 1; }' "$AWS" "$W/data"
  cell head a s3api head-object --bucket "$BUCKET" --key "${PREFIX}a"
  cell list bash -c '"$0" --endpoint-url "$EP" s3 ls "s3://$BUCKET/$PREFIX" | grep -q " ${PREFIX#*/}a$" || { echo "not listed" >&2; exit 1; }' "$AWS"
  cell copy bash -c '"$0" --endpoint-url "$EP" s3api copy-object --bucket "$BUCKET" --key "${PREFIX}copy" --copy-source "$BUCKET/${PREFIX}a" &&
    "$0" --endpoint-url "$EP" s3api get-object --bucket "$BUCKET" --key "${PREFIX}copy" "$1.copy" >/dev/null && cmp -s "$1" "$1.copy"' "$AWS" "$W/data"
  DETAIL="aws s3 presign, fetched with curl"
  cell presigned-get bash -c 'u=$("$0" --endpoint-url "$EP" s3 presign "s3://$BUCKET/${PREFIX}a") && fetch "$u" "$1.pg" && cmp -s "$1" "$1.pg"' "$AWS" "$W/data"
  printf 'CELL\tpresigned-put\tna\tthe AWS CLI presigns GET only\n'
  cell delete bash -c '"$0" --endpoint-url "$EP" s3api delete-object --bucket "$BUCKET" --key "${PREFIX}copy" &&
    ! "$0" --endpoint-url "$EP" s3api head-object --bucket "$BUCKET" --key "${PREFIX}copy" 2>/dev/null' "$AWS"
else
  probe() { # method key
    local err
    if [ "$1" = HEAD ]; then err=$(a s3api head-object --bucket "$TIGHT" --key "$2" 2>&1 >/dev/null)
    else err=$(a s3api get-object --bucket "$TIGHT" --key "$2" "$W/$2" 2>&1 >/dev/null); fi
    local rc=$?
    if [ $rc = 0 ]; then printf 'PROBE\t%s\t%s\tok\t\t\n' "$1" "$2"; else
      case "$err" in *SlowDown*|*Throttl*) c=throttle ;; *) c=other ;; esac
      printf 'PROBE\t%s\t%s\terror\t%s\t%s\n' "$1" "$2" "$c" "$(echo "$err" | tr '\n\t' '  ' | cut -c1-200)"; fi
  }
  for m in HEAD GET; do
    for i in $(seq 0 $((PROBES - 1))); do probe $m "$(echo $m | tr A-Z a-z)$i" >"$W/probe$m$i" & done
    wait; cat "$W"/probe$m*
  done
fi
