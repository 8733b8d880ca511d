# Helpers of the client-matrix shell scripts (awscli, rclone, s3cmd), sourced by each after it has set W, its
# working directory. Prints tab-separated lines as ClientMatrixIT reads them.

# fetch URL FILE: a presigned GET with curl; on another answer than 200, says which and the signature kind
fetch() {
  local code kind
  case "$1" in *AWSAccessKeyId=*) kind="SigV2 query string" ;; *) kind="SigV4 query string" ;; esac
  code=$(curl -sS -o "$2" -w '%{http_code}' "$1") || return 1
  [ "$code" = 200 ] || { echo "$kind: HTTP $code $(head -c 200 "$2")" >&2; return 1; }
}
export -f fetch

# cell_error: the part of a failed command's error output a fail cell shows (a script may redefine it)
cell_error() { grep -v '^$' | tail -3; }

# cell OP COMMAND...: runs the command; the cell is ok (with $DETAIL, then cleared) when it exits 0, else fail
# with the end of its error output
cell() {
  local op=$1; shift
  if err=$("$@" 2>&1 >"$W/out"); then printf 'CELL\t%s\tok\t%s\n' "$op" "${DETAIL:-}"; else
    printf 'CELL\t%s\tfail\t%s\n' "$op" "$(echo "$err" | cell_error | tr '\n\t' '  ' | cut -c1-300)"; fi
  DETAIL=""
}
