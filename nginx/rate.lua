-- rate.lua: Levee's enforcement point in NGINX (docs/nginx.md). Works with Debian/Ubuntu nginx +
-- libnginx-mod-http-lua and with OpenResty.
--
-- Used from every S3 location as
--
--     access_by_lua_block { require("rate").attempt("/.levee", { on_failure = "allow" }) }
--
-- Two transports ask levee-client (docs/nginx.md, "Transports: subrequest and cosocket"):
--
--   subrequest (the default)  one subrequest to the internal location, answered over HTTP
--   cosocket                  a line of levee-line/1 over a pooled TCP connection straight to
--                             levee-client's --line-listen, no subrequest:
--       attempt("/.levee", { on_failure = "allow", transport = "cosocket", host = "127.0.0.1",
--                            port = 7201, timeout = 1000, pool_size = 64, keepalive = 30000 })
--
-- Both give the same results, failure policy, logging, counters, $levee_result and response fields.
--
-- The subrequest: attempt() makes one subrequest to the internal location "/.levee" (levee-check.conf.in), which
-- proxy_passes to the local levee-client over a keep-alive upstream. That location sends the raw
-- facts of the S3 request as X-Levee-* headers (method, Host, request URI with its query string,
-- x-amz-copy-source) and nothing else: no body, no Content-Length, no Transfer-Encoding, no
-- Expect. levee-client answers
--
--     200 + X-Levee-Result: accepted  -> the request continues to the S3 backend
--     429 + X-Levee-Result: rejected  -> 503 Slow Down (S3 XML error body, Retry-After, x-amz-retry-after in
--                                        ms, request id)
--     anything else                   -> failed: on_failure decides ("allow", the default, or "deny")
--
-- A status without the matching X-Levee-Result counts as failed, so a check that reaches the wrong
-- service (an upstream answering 200 to everything) never passes as accepted. Any Lua error inside
-- attempt() (a bad argument, an error raised by the lua module) is caught and takes the on_failure
-- path as well: never a bare 500. HTTP/2 requests, from which the lua module makes no
-- subrequests, are failed checks with that reason in the error log.
--
-- RateLimit header fields (IETF draft-ietf-httpapi-ratelimit-headers; docs/nginx.md): levee-client
-- answers a rejected check with RateLimit-Policy and RateLimit, and rate.lua copies them onto the
-- 503 SlowDown beside Retry-After. With { ratelimit_on_accept = true } the check asks for them on
-- accepted checks too (GET /v1/s3check?ratelimit=1) and rate.lua sets them on the response the
-- backend's answer becomes (default off: nothing added to accepted responses).
--
-- The result word goes to $levee_result for the access log. Failures are counted, with accepted
-- and rejected, in the optional shared dict "levee" (see stats()) and written to the error log:
-- at once when the reason changes, else at most once per second per worker, with the number of
-- failures since the previous line.
--
-- The status line of a refusal is "HTTP/1.1 503 Slow Down", as S3's (issue 24): ngx.resp.set_status where the
-- lua module has it; else (Debian 12's lua-nginx-module 0.10.23) the whole response is written on the raw
-- connection from @levee_slowdown, and NGINX closes the connection after it (docs/nginx.md).
--
-- With { chunked_location = "@levee_chunked" }, a chunked upload whose Transfer-Encoding the client signed is
-- read here and sent from that location still chunked (NGINX would forward a body it read whole with
-- Content-Length, breaking the signature; docs/nginx.md, "Signed chunked uploads").
--
-- The client's body is otherwise never read here. A refused request that announced a body is handed to the
-- named location @levee_slowdown (keepalive_timeout 0): the 503 goes out without "100 Continue"
-- and NGINX then closes the connection (lingering close) instead of reading the upload to discard
-- it. A refused request without a body keeps its keep-alive connection.
--
-- The subrequest's timeout is the internal location's proxy_*_timeout: a subrequest cannot be
-- abandoned from Lua, so that transport has no per-call timeout option (docs/nginx.md).
--
-- Batches (docs/design.md §12, "Batches in NGINX"): with { batches = true } (subrequest transport only, not with
-- ratelimit_on_accept; needs lua_shared_dict levee_batches, levee-http.conf) the check says "batch=<n>" and
-- levee-client (with leases, its default) may answer an admission from a request lease with
--
--     X-Levee-Batch: <slots> <life µs> <label>
--
-- the lease's next usable slots, for the next requests to the same bucket, each usable once, until <life µs> after
-- the check was sent (read on CLOCK_MONOTONIC before the subrequest, so the deadline is never later than
-- levee-client's). levee-client gives a batch only for a bucket whose every request is counted on one key. Here a
-- bucket is told by the request's first path segment and Host, which is all levee-client's classifier reads to name
-- the bucket (a request target that is not "/<segment>..." never uses a batch). The batch is shared by the workers
-- in levee_batches: a generation number per batch, an atomic counter per generation; a request takes a slot while
-- the counter stays within the batch and the deadline has not passed, else it is checked as always, reporting how
-- many requests the batch admitted (levee-client counts them as arrivals on the key). Slots left at the deadline
-- are lost. A request admitted from a batch has $levee_result "accepted" and $levee_lease the batch's label
-- (<lease id>/<limiter id>/<first slot>-<last slot>, as levee-client's log line of the batch); it is counted as
-- accepted and as "batched" in the shared dict "levee".
--
-- The cosocket transport sends "C <flags> <method><host><uri><copy-source>\n", each field as
-- "<length>:<bytes>" ($request_method, $http_host, $request_uri, $http_x_amz_copy_source; flags 1 asks
-- for the RateLimit fields on an accepted answer), and reads one line back:
--
--     <accepted|rejected|failed> TAB <retry-after> TAB <RateLimit-Policy> TAB <RateLimit> LF
--
-- timeout (ms) bounds the connect, the send and the read each. Any socket error or timeout closes the
-- socket and fails the check with a reason naming the step (connect, send, receive); an answer that is
-- not exactly of that form (an unknown result, a field too many, "error" from levee-client) fails it
-- too. After a good answer the connection goes back to a per-worker pool of pool_size idle
-- connections, for keepalive ms (default 30 s: below levee-client's 60 s --line-idle-timeout, so no
-- check is sent on a connection the client is closing). A pooled connection found closed at send or
-- receive, before any byte of an answer, is tried once more on a fresh one (levee-client restarted),
-- as proxy_next_upstream does for the subrequest; a timeout is not. HTTP/2 requests can use
-- cosockets: with this transport they are checked like any other.

local _M = { _VERSION = "0.1.0" }

local ngx = ngx
local capture = ngx.location.capture
local HTTP_GET = ngx.HTTP_GET
local tonumber = tonumber
local tostring = tostring
local type = type
local pcall = pcall
local pairs = pairs
local floor = math.floor
local find = string.find
local sub = string.sub
local gsub = string.gsub
local tcp = ngx.socket.tcp
local byte = string.byte

local ACCEPTED = "accepted"
local REJECTED = "rejected"
local FAILED = "failed"

local SLOWDOWN_LOCATION = "@levee_slowdown"
local SLOWDOWN_MESSAGE = "Please reduce your request rate."
-- the status line S3 sends: AWS SDK for Java v2 tells a throttled HEAD (no body) by its reason phrase (issue 24)
local SLOWDOWN_REASON = "Slow Down"

-- ngx.resp.set_status(status, reason) where the lua module has it (lua-resty-core 0.1.26 with
-- lua-nginx-module 0.10.24 and later, OpenResty 1.21.4.2 and later); nil with Debian 12's 0.10.23, whose
-- ngx.status cannot carry a reason: the refusal is then written on the raw connection (write_raw_refusal)
local set_status_with_reason = nil
do
    local ok, resp = pcall(require, "ngx.resp")
    if ok and type(resp) == "table" and type(resp.set_status) == "function" then
        set_status_with_reason = resp.set_status
    end
end

-- per worker: failures since the last error-log line, when that line was written (seconds) and
-- the reason it gave
local pending_failures = 0
local last_failure_log = 0
local last_failure_reason = nil

local XML_ESCAPES = { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;", ["'"] = "&apos;" }

local function xml_escape(s)
    -- control characters are not allowed in XML 1.0 text: replace them rather than emit bad XML
    s = gsub(s, "[%z\1-\8\11\12\14-\31\127]", "?")
    return (gsub(s, "[&<>\"']", XML_ESCAPES))
end

local function set_var(name, value)
    -- the variables exist only where levee-check.conf is included: without it, skip quietly
    return pcall(function() ngx.var[name] = value end)
end

local function count(what)
    local dict = ngx.shared.levee
    if dict then
        dict:incr(what, 1, 0)
    end
end

local function log_failure(reason, policy)
    count(FAILED)
    pending_failures = pending_failures + 1
    local now = ngx.now()
    if reason ~= last_failure_reason or now - last_failure_log >= 1 then
        ngx.log(ngx.ERR, "levee: check failed (", reason, "); on_failure=", policy, "; ",
                pending_failures, " failed check(s) in this worker since the last report")
        pending_failures = 0
        last_failure_log = now
        last_failure_reason = reason
    end
end

local function announces_body()
    if ngx.var.http_transfer_encoding ~= nil then
        return true
    end
    local length = tonumber(ngx.var.http_content_length)
    return length ~= nil and length > 0
end

local RATELIMIT_POLICY = "RateLimit-Policy"
local RATELIMIT = "RateLimit"

-- Sets the RateLimit header fields of the response, when levee-client sent them.
local function set_ratelimit(policy, limit)
    if policy ~= nil and limit ~= nil and policy ~= "" and limit ~= "" then
        ngx.header[RATELIMIT_POLICY] = policy
        ngx.header[RATELIMIT] = limit
    end
end

-- Whether the refusal's reason phrase can only be sent on the raw connection: a lua module without
-- ngx.resp.set_status, over HTTP/1.x (HTTP/2 has no reason phrase, and no raw request socket).
local function needs_raw_refusal()
    return set_status_with_reason == nil and ngx.req.http_version() < 2
end

-- Writes the whole 503 Slow Down response on the client's raw connection (content phase only), for a
-- lua module whose ngx.status carries no reason. NGINX closes the connection afterwards (a raw request
-- socket ends keep-alive), so the response says Connection: close. Returns false when the raw socket
-- cannot be had; nothing was written then.
local function write_raw_refusal(body, retry_after, request_id, policy, limit)
    ngx.status = ngx.HTTP_SERVICE_UNAVAILABLE -- for the access log; set before the raw socket takes the header
    local sock = ngx.req.socket(true)
    if sock == nil then
        return false
    end
    local head = { "HTTP/1.1 503 ", SLOWDOWN_REASON, "\r\nDate: ", ngx.http_time(ngx.time()),
                   "\r\nContent-Type: application/xml\r\nContent-Length: ", #body,
                   "\r\nConnection: close\r\nRetry-After: ", retry_after,
                   "\r\nx-amz-retry-after: ", retry_after * 1000,
                   "\r\nx-amz-request-id: ", request_id, "\r\n" }
    if policy ~= nil and limit ~= nil and policy ~= "" and limit ~= "" then
        head[#head + 1] = RATELIMIT_POLICY .. ": " .. policy .. "\r\n" .. RATELIMIT .. ": " .. limit .. "\r\n"
    end
    head[#head + 1] = "\r\n"
    if ngx.req.get_method() ~= "HEAD" then
        head[#head + 1] = body
    end
    sock:send(head) -- a client gone meanwhile: nothing more to do
    return true
end

-- Writes the 503 SlowDown response (AWS S3 REST error response) and ends the request.
local function respond_slow_down(retry_after, policy, limit)
    local uri = ngx.var.request_uri or "/"
    local q = find(uri, "?", 1, true)
    local path = q and sub(uri, 1, q - 1) or uri
    local request_id = ngx.var.request_id or ""
    local body = '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code><Message>'
            .. SLOWDOWN_MESSAGE .. "</Message><Resource>" .. xml_escape(path) .. "</Resource><RequestId>"
            .. request_id .. "</RequestId></Error>\n"
    if needs_raw_refusal() and ngx.get_phase() == "content"
            and write_raw_refusal(body, retry_after, request_id, policy, limit) then
        return ngx.exit(ngx.HTTP_OK)
    end
    ngx.status = ngx.HTTP_SERVICE_UNAVAILABLE
    if set_status_with_reason ~= nil then
        -- a module that declares it but lacks its C side fails here: the status stays 503 without the reason
        pcall(set_status_with_reason, ngx.HTTP_SERVICE_UNAVAILABLE, SLOWDOWN_REASON)
    end
    ngx.header["Content-Type"] = "application/xml"
    ngx.header["Content-Length"] = #body
    ngx.header["Retry-After"] = retry_after
    -- the same decision in milliseconds, which the AWS SDKs' 2026 retry behaviour clamps its back-off to
    ngx.header["x-amz-retry-after"] = retry_after * 1000
    ngx.header["x-amz-request-id"] = request_id
    set_ratelimit(policy, limit)
    if ngx.req.get_method() == "HEAD" then
        ngx.send_headers()
    else
        ngx.print(body)
    end
    return ngx.exit(ngx.HTTP_OK)
end

-- Refuses the current request with 503 SlowDown (from the access phase).
local function refuse(retry_after, policy, limit)
    -- an upload (no "100 Continue", no reading it: @levee_slowdown closes), or a refusal whose reason phrase
    -- needs the raw connection, which the content phase of @levee_slowdown gives
    if announces_body() or needs_raw_refusal() then
        ngx.req.clear_header("Expect")
        if set_var("levee_retry_after", tostring(retry_after)) then
            -- the fields go by variables too (ngx.ctx does not survive ngx.exec); a levee-check.conf
            -- older than the fields lacks them, and the 503 then goes without them
            set_var("levee_ratelimit_policy", policy or "")
            set_var("levee_ratelimit", limit or "")
            return ngx.exec(SLOWDOWN_LOCATION)
        end
    end
    return respond_slow_down(retry_after, policy, limit)
end

local function retry_after_of(res)
    local v = tonumber(res.header["Retry-After"])
    if v == nil or v ~= v or v < 1 then
        return 1
    end
    return floor(v)
end

-- CLOCK_MONOTONIC read through LuaJIT's FFI, seconds (a double): the batches' deadlines. ngx.now() is the wall
-- clock, cached per event-loop turn; resty.core.time's monotonic_msec is cached too. nil where the FFI is missing:
-- batches are then off (attempt() says so).
local monotonic = nil
do
    local ok_ffi, ffi = pcall(require, "ffi")
    if ok_ffi then
        pcall(ffi.cdef, "typedef struct { long tv_sec; long tv_nsec; } levee_timespec;"
                .. " int clock_gettime(int clk_id, levee_timespec *tp);")
        local ok_ts, ts = pcall(ffi.new, "levee_timespec")
        local C = ffi.C
        if ok_ts and pcall(function() return C.clock_gettime(1, ts) end) then
            monotonic = function()
                C.clock_gettime(1, ts) -- 1: CLOCK_MONOTONIC (Linux)
                return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
            end
        end
    end
end

local BATCHES_DICT = "levee_batches"
local BATCH_HEADER = "X-Levee-Batch"

-- The batch scope of the current request: "<first path segment> <Host>" (a raw segment has no space), or nil when
-- the request target is not "/<segment>..." (absolute form, "//", "*"): levee-client's classifier names the bucket
-- from these two alone.
local function scope_of(var)
    local uri = var.request_uri
    if uri == nil or byte(uri, 1) ~= 47 or byte(uri, 2) == 47 then -- "/" and not "//"
        return nil
    end
    local e = find(uri, "[/?]", 2)
    return (e and sub(uri, 2, e - 1) or sub(uri, 2)) .. " " .. (var.http_host or "")
end

-- Per worker: the last parsed entry of each scope ({ raw, gen, slots, deadline, label }), so that an entry is parsed
-- once per batch, not per request; at most BATCH_CACHE scopes (lua-resty-lrucache, least recently used out).
local BATCH_CACHE = 1024
local parsed = nil
do
    local ok, lrucache = pcall(require, "resty.lrucache")
    if ok then
        parsed = lrucache.new(BATCH_CACHE)
    end
end

-- Parses a levee_batches entry "<gen> <slots> <deadline> <label>".
local function parse_entry(raw)
    local a = find(raw, " ", 1, true)
    local b = a and find(raw, " ", a + 1, true)
    local c = b and find(raw, " ", b + 1, true)
    if c == nil then
        return nil
    end
    return { raw = raw, gen = sub(raw, 1, a - 1), slots = tonumber(sub(raw, a + 1, b - 1)),
             deadline = tonumber(sub(raw, b + 1, c - 1)), label = sub(raw, c + 1) }
end

-- Takes a slot of the scope's batch: returns the batch's label when the request is admitted from it; else nil and
-- how many requests the batch admitted, to report (nil when another worker reports it, or there is no batch).
local function take_from_batch(dict, scope)
    local raw = dict:get(scope)
    if raw == nil then
        return nil, nil
    end
    local entry = parsed and parsed:get(scope)
    if entry == nil or entry.raw ~= raw then
        entry = parse_entry(raw)
        if entry == nil or entry.slots == nil or entry.deadline == nil then
            return nil, nil
        end
        if parsed then
            parsed:set(scope, entry)
        end
    end
    local counter = scope .. "\n" .. entry.gen
    if monotonic() < entry.deadline then
        local n = dict:incr(counter, 1, 0, 60)
        if n ~= nil and n <= entry.slots then
            return entry.label
        end
    end
    -- used up or past its deadline: one worker reports how many it admitted, then the scope's entry goes
    if dict:add(counter .. "r", true, 60) then
        local n = dict:get(counter) or 0
        return nil, n < entry.slots and n or entry.slots
    end
    return nil, nil
end

-- How long one request may hold the right to fetch a scope's next batch, s: past it (a check that never came
-- back) another may.
local FETCH_HOLD = 1

-- Installs the batch of an X-Levee-Batch answer for the scope, from the instant the check was sent.
local function install_batch(dict, scope, value, sent)
    local s1 = find(value, " ", 1, true)
    local s2 = s1 and find(value, " ", s1 + 1, true)
    if s2 == nil then
        return false
    end
    local slots = tonumber(sub(value, 1, s1 - 1))
    local life_us = tonumber(sub(value, s1 + 1, s2 - 1))
    local label = sub(value, s2 + 1)
    if slots == nil or life_us == nil or slots < 1 or slots ~= floor(slots) or life_us < 1 or life_us > 60e6
            or label == "" or find(label, "[%c]") ~= nil then
        return false
    end
    local gen = dict:incr("levee:batch-generation", 1, 0)
    if gen == nil then
        return false
    end
    local deadline = sent + life_us * 1e-6
    dict:set(scope, gen .. " " .. slots .. " " .. string.format("%.6f", deadline) .. " " .. label, life_us * 1e-6 + 1)
    return true
end

local CHECK_PLAIN = { method = HTTP_GET }
local CHECK_WITH_FIELDS = { method = HTTP_GET, args = "ratelimit=1" }

-- levee-line/1: the longest field levee-client takes, bytes (its LineDecoder)
local MAX_METHOD = 32
local MAX_HOST = 1024
local MAX_URI = 16384
local MAX_COPY_SOURCE = 8192

-- per worker: connect options per levee-client address and pool size, and the options of a fresh
-- connection for the one retry (a pool that is never filled)
local pools = {}

local function pool_of(host, port, pool_size)
    local by_host = pools[host]
    if by_host == nil then
        by_host = {}
        pools[host] = by_host
    end
    local key = port * 100000 + pool_size
    local p = by_host[key]
    if p == nil then
        local name = "levee-line/" .. host .. ":" .. port .. "/" .. pool_size
        p = { pooled = { pool = name, pool_size = pool_size }, fresh = { pool = name .. "/fresh" } }
        by_host[key] = p
    end
    return p
end

-- Whether a failure on a connection taken from the pool means levee-client closed it before reading
-- the request (it restarted): then one more try on a fresh connection.
local function closed_under_us(err, partial)
    if partial ~= nil and partial ~= "" then
        return false
    end
    return err == "closed" or find(err, "reset", 1, true) ~= nil or find(err, "broken pipe", 1, true) ~= nil
end

-- Sends one request and reads the answer line; returns the line and the socket, or nil, the reason and
-- whether to retry on a fresh connection.
local function exchange(request, host, port, timeout, connect_opts)
    local sock, err = tcp()
    if sock == nil then
        return nil, "socket: " .. tostring(err), false
    end
    sock:settimeout(timeout)
    local ok
    ok, err = sock:connect(host, port, connect_opts)
    if not ok then
        return nil, "connect to " .. host .. ":" .. port .. ": " .. tostring(err), false
    end
    local reused = (sock:getreusedtimes() or 0) > 0
    local sent
    sent, err = sock:send(request)
    if not sent then
        sock:close()
        return nil, "send: " .. tostring(err), reused and closed_under_us(err, nil)
    end
    local line, partial
    line, err, partial = sock:receive("*l")
    if line == nil then
        sock:close()
        return nil, "receive: " .. tostring(err), reused and closed_under_us(err, partial)
    end
    return line, sock
end

local function excerpt(s)
    if #s > 120 then
        return sub(s, 1, 120) .. "..."
    end
    return s
end

-- the most frequent answer, compared first (Lua strings are interned: one pointer comparison)
local ACCEPTED_PLAIN = "accepted\t0\t\t"

-- Reads an answer line strictly; returns the word, Retry-After, RateLimit-Policy and RateLimit (or nil),
-- or nil and the reason it is not an answer.
local function parse_answer(line)
    if line == ACCEPTED_PLAIN then
        return ACCEPTED, 0
    end
    local t1 = find(line, "\t", 1, true)
    if t1 == nil then
        return nil, "levee-client answered \"" .. excerpt(line) .. "\", not a levee-line/1 answer"
    end
    local word = sub(line, 1, t1 - 1)
    if word == "error" then
        return nil, "levee-client refused the request: " .. excerpt(sub(line, t1 + 1))
    end
    local t2 = find(line, "\t", t1 + 1, true)
    local t3 = t2 and find(line, "\t", t2 + 1, true)
    if t3 == nil or find(line, "\t", t3 + 1, true) ~= nil then
        return nil, "levee-client answered \"" .. excerpt(line) .. "\", not four fields"
    end
    local retry = sub(line, t1 + 1, t2 - 1)
    local policy = sub(line, t2 + 1, t3 - 1)
    local limit = sub(line, t3 + 1)
    if word == REJECTED then
        -- a decimal >= 1 (a pattern: this runs on refusals only)
        if find(retry, "^[1-9]%d*$") == nil then
            return nil, "levee-client answered rejected with Retry-After \"" .. excerpt(retry) .. "\""
        end
    elseif word == ACCEPTED or word == FAILED then
        if retry ~= "0" then
            return nil, "levee-client answered " .. word .. " with Retry-After \"" .. excerpt(retry) .. "\""
        end
    else
        return nil, "levee-client answered an unknown result \"" .. excerpt(word) .. "\""
    end
    if (policy == "") ~= (limit == "") then
        return nil, "levee-client answered one RateLimit field without the other"
    end
    if policy == "" then
        return word, tonumber(retry)
    end
    return word, tonumber(retry), policy, limit
end

-- Asks levee-client over the line protocol (cosocket transport); returns as check() does.
local function check_cosocket(on_accept, host, port, timeout, pool_size, keepalive)
    local var = ngx.var
    local method = var.request_method or ""
    local http_host = var.http_host or ""
    local uri = var.request_uri or ""
    local copy = var.http_x_amz_copy_source or ""
    if #method > MAX_METHOD or #http_host > MAX_HOST or #uri > MAX_URI or #copy > MAX_COPY_SOURCE then
        return FAILED, 0, "request too long for levee-line/1 (method " .. #method .. ", host " .. #http_host
                .. ", uri " .. #uri .. ", copy-source " .. #copy .. " bytes; limits 32, 1024, 16384, 8192)"
    end
    local request = (on_accept and "C 1 " or "C 0 ") .. #method .. ":" .. method .. #http_host .. ":" .. http_host
            .. #uri .. ":" .. uri .. #copy .. ":" .. copy .. "\n"
    local pool = pool_of(host, port, pool_size)
    local line, sock, retry = exchange(request, host, port, timeout, pool.pooled)
    local fresh = false
    if line == nil and retry then
        fresh = true
        line, sock = exchange(request, host, port, timeout, pool.fresh)
    end
    if line == nil then
        return FAILED, 0, sock -- the reason
    end
    local word, retry_after, rl_policy, rl_limit = parse_answer(line)
    if word == nil then
        sock:close()
        return FAILED, 0, retry_after -- the reason
    end
    if fresh then
        sock:close() -- keeps the "fresh" pool empty
    else
        sock:setkeepalive(keepalive)
    end
    if word == FAILED then
        return FAILED, 0, "levee-client answered failed"
    end
    if word == ACCEPTED and not on_accept then
        return ACCEPTED, 0
    end
    return word, retry_after, nil, rl_policy, rl_limit
end

-- Asks levee-client through the internal location, or over the line protocol when cosocket;
-- returns the result word, Retry-After (seconds), when failed the reason, and the RateLimit-Policy
-- and RateLimit values (or nil).
local function check(location, on_accept, cosocket, host, port, timeout, pool_size, keepalive, batch_used)
    if type(location) ~= "string" or location == "" then
        error("the check location must be a path such as \"/.levee\", got " .. tostring(location))
    end
    if cosocket then
        return check_cosocket(on_accept, host, port, timeout, pool_size, keepalive)
    end
    if sub(location, 1, 1) ~= "/" then
        -- the form of the original design, attempt(".levee", ...), names the same location
        location = "/" .. location
    end
    if ngx.req.http_version() == 2 then
        -- the lua module cannot make subrequests from HTTP/2 requests: say so rather than
        -- report its generic error; the S3 listener must not enable http2 (docs/nginx.md)
        return FAILED, 0, "HTTP/2 request: the NGINX lua module makes no subrequests from HTTP/2;"
                .. " serve S3 over HTTP/1.1 on this listener"
    end
    local res = capture(location, batch_used ~= nil and { method = HTTP_GET, args = "batch=" .. batch_used }
            or on_accept and CHECK_WITH_FIELDS or CHECK_PLAIN)
    local result = res.header["X-Levee-Result"]
    if res.status == 200 and result == ACCEPTED then
        if batch_used ~= nil then
            return ACCEPTED, 0, nil, nil, nil, res.header[BATCH_HEADER]
        end
        if on_accept then
            return ACCEPTED, 0, nil, res.header[RATELIMIT_POLICY], res.header[RATELIMIT]
        end
        return ACCEPTED, 0
    end
    if res.status == 429 and result == REJECTED then
        return REJECTED, retry_after_of(res), nil, res.header[RATELIMIT_POLICY], res.header[RATELIMIT]
    end
    return FAILED, 0, "levee-client answered " .. tostring(res.status) .. " " .. tostring(result)
            .. (res.truncated and " (truncated)" or "")
end

-- Whether the client signed its Transfer-Encoding (SigV4 SignedHeaders, or a presigned URL's X-Amz-SignedHeaders).
local function signs_transfer_encoding()
    local list
    local auth = ngx.var.http_authorization
    if auth ~= nil then
        list = auth:match("SignedHeaders=([^,%s]+)")
    else
        local q = ngx.var["arg_X-Amz-SignedHeaders"]
        list = q and ngx.unescape_uri(q)
    end
    return list ~= nil and find(";" .. list:lower() .. ";", ";transfer-encoding;", 1, true) ~= nil
end

-- the most a chunked upload handed to chunked_location may be, bytes: it is held whole in the worker's memory
local MAX_RECHUNKED = 16 * 1024 * 1024

-- A chunked upload whose Transfer-Encoding the client signed must reach the backend chunked: NGINX forwards a
-- chunked body it has read whole (a small one, arrived with the headers) with Content-Length instead, and the
-- store then refuses the signature (issue 24). Such a body is read here, framed again as one chunk and sent
-- from chunked_location (proxy_set_body $levee_chunked_body, Transfer-Encoding: chunked, no Content-Length).
-- Chunk boundaries are not signed; the payload, the headers and the request line go as the client sent them.
-- Returns only when the request goes on as it is (no chunked body, unsigned, too large, or an older check part).
local function forward_chunked(location)
    local te = ngx.var.http_transfer_encoding
    if location == nil or te == nil or te:lower() ~= "chunked" or ngx.req.http_version() ~= 1.1
            or not signs_transfer_encoding() then
        return
    end
    ngx.req.read_body()
    local data = ngx.req.get_body_data()
    if data == nil then
        local file = ngx.req.get_body_file()
        if file ~= nil then
            local f = io.open(file, "rb")
            if f ~= nil then
                local size = f:seek("end")
                if size ~= nil and size <= MAX_RECHUNKED then
                    f:seek("set")
                    data = f:read("*a")
                end
                f:close()
            end
            if data == nil then
                ngx.log(ngx.WARN, "levee: a signed chunked upload of more than ", MAX_RECHUNKED,
                        " bytes goes to the backend with Content-Length (NGINX has read it whole)")
                return
            end
        else
            data = ""
        end
    end
    local body = (#data > 0 and (string.format("%x", #data) .. "\r\n" .. data .. "\r\n") or "") .. "0\r\n\r\n"
    if not set_var("levee_chunked_body", body) then
        return -- a levee-check.conf older than chunked_location: the request goes on as before
    end
    return ngx.exec(location)
end

-- the options of the cosocket transport, refused with the subrequest one (a forgotten transport)
local COSOCKET_OPTIONS = { "host", "port", "timeout", "pool_size", "keepalive" }

local function whole(opts, name, default, lo, hi)
    local v = opts[name]
    if v == nil then
        return default
    end
    if type(v) ~= "number" or v ~= floor(v) or v < lo or v > hi then
        error(name .. " must be a whole number from " .. lo .. " to " .. hi .. ", got " .. tostring(v))
    end
    return v
end

-- Reads on_failure, first: a bad value of another option then takes the policy asked for.
local function policy_of(opts)
    if opts == nil then
        return "allow"
    end
    if type(opts) ~= "table" then
        error("options must be a table such as { on_failure = \"allow\" }")
    end
    local policy = opts.on_failure or "allow"
    if policy ~= "allow" and policy ~= "deny" then
        error("on_failure must be \"allow\" or \"deny\", got " .. tostring(policy))
    end
    return policy
end

-- Reads the other options: ratelimit_on_accept, whether the transport is cosocket and, if so, host,
-- port, timeout (ms), pool_size and keepalive (ms).
local function options_of(opts)
    if opts == nil then
        return false, false
    end
    local on_accept = opts.ratelimit_on_accept
    if on_accept ~= nil and on_accept ~= true and on_accept ~= false then
        error("ratelimit_on_accept must be true or false, got " .. tostring(on_accept))
    end
    local chunked = opts.chunked_location
    if chunked ~= nil and (type(chunked) ~= "string" or (sub(chunked, 1, 1) ~= "@" and sub(chunked, 1, 1) ~= "/")) then
        error("chunked_location must be a location such as \"@levee_chunked\", got " .. tostring(chunked))
    end
    local transport = opts.transport
    if transport == nil or transport == "subrequest" then
        for i = 1, #COSOCKET_OPTIONS do
            if opts[COSOCKET_OPTIONS[i]] ~= nil then
                error(COSOCKET_OPTIONS[i] .. " is an option of transport = \"cosocket\"")
            end
        end
        return on_accept == true, false
    end
    if transport ~= "cosocket" then
        error("transport must be \"subrequest\" or \"cosocket\", got " .. tostring(transport))
    end
    local host = opts.host
    if host == nil then
        host = "127.0.0.1"
    elseif type(host) ~= "string" or host == "" or find(host, " ", 1, true) ~= nil or find(host, "/", 1, true) ~= nil then
        error("host must be an address such as \"127.0.0.1\", got " .. tostring(host))
    end
    return on_accept == true, true, host, whole(opts, "port", 7201, 1, 65535),
            whole(opts, "timeout", 1000, 1, 60000), whole(opts, "pool_size", 64, 1, 10000),
            whole(opts, "keepalive", 30000, 1, 3600000)
end

-- Reads the batches option: false, or the levee_batches dict when { batches = true } may be used with the others.
local function batches_of(opts, on_accept, cosocket)
    local b = type(opts) == "table" and opts.batches or nil
    if b == nil or b == false then
        return false
    end
    if b ~= true then
        error("batches must be true or false, got " .. tostring(b))
    end
    if cosocket then
        error("batches = true works with the subrequest transport only")
    end
    if on_accept then
        error("batches = true cannot go with ratelimit_on_accept = true (a batch's admissions carry no RateLimit fields)")
    end
    local dict = ngx.shared[BATCHES_DICT]
    if dict == nil then
        error("batches = true needs \"lua_shared_dict " .. BATCHES_DICT .. " 1m;\" in http { } (levee-http.conf)")
    end
    if monotonic == nil then
        error("batches = true needs LuaJIT's FFI for the monotonic clock, which this lua module lacks")
    end
    return dict
end

-- Decides from the scope's batch or with a check that takes one (batches = true); returns as check(), and the
-- batch's label when the request was admitted from a batch.
local function check_with_batches(location, dict)
    local scope = scope_of(ngx.var)
    if scope == nil then
        return check(location, false, false)
    end
    local label, used = take_from_batch(dict, scope)
    if label ~= nil then
        return ACCEPTED, 0, nil, nil, nil, label
    end
    -- one request at a time fetches the scope's next batch (a batch installed over another one would lose its
    -- slots); the others are checked without taking one, and report nothing
    local fetch = scope .. "\nfetch"
    if not dict:add(fetch, true, FETCH_HOLD) then
        if used ~= nil and used > 0 then
            dict:incr(scope .. "\nunreported", used, 0, 60) -- reported by the next fetch
        end
        return check(location, false, false)
    end
    local unreported = dict:get(scope .. "\nunreported")
    if unreported ~= nil and unreported > 0 then
        dict:incr(scope .. "\nunreported", -unreported)
        used = (used or 0) + unreported
    end
    local sent = monotonic()
    local ok, word, retry_after, reason, rl_policy, rl_limit, batch = pcall(check, location, false, false, nil, nil, nil,
            nil, nil, used and (used < 1000000 and used or 1000000) or 0)
    dict:delete(fetch)
    if not ok then
        error(word, 0)
    end
    if batch ~= nil and not install_batch(dict, scope, batch, sent) then
        ngx.log(ngx.WARN, "levee: levee-client sent a batch this rate.lua cannot read (X-Levee-Batch: ",
                excerpt(batch), "): not used")
    end
    return word, retry_after, reason, rl_policy, rl_limit
end

--- Checks the current request with Levee and enforces the decision (access phase).
-- @param location internal location that proxies to levee-client, e.g. "/.levee" (".levee" works too);
--                 with the cosocket transport it must still be given (it is not used)
-- @param opts     { on_failure = "allow" | "deny" (default "allow"),
--                   ratelimit_on_accept = true | false (default false),
--                   chunked_location = "@levee_chunked" (default none: signed chunked uploads are not re-framed),
--                   batches = true | false (default false: see "Batches" above; subrequest transport only),
--                   transport = "subrequest" | "cosocket" (default "subrequest"),
--                   and with "cosocket": host (default "127.0.0.1"), port (7201), timeout (ms for
--                   each of connect, send and read: 1000), pool_size (idle connections kept per
--                   worker: 64), keepalive (ms an idle connection is kept: 30000) }
function _M.attempt(location, opts)
    local policy = "allow"
    local ok, word, retry_after, reason, rl_policy, rl_limit, batch_label = pcall(function()
        policy = policy_of(opts)
        local on_accept, cosocket, host, port, timeout, pool_size, keepalive = options_of(opts)
        local batches = batches_of(opts, on_accept, cosocket)
        if batches then
            return check_with_batches(location, batches)
        end
        return check(location, on_accept, cosocket, host, port, timeout, pool_size, keepalive)
    end)
    if not ok then
        -- word holds the error message
        word, reason = FAILED, "lua error: " .. tostring(word)
    end
    set_var("levee_result", word)
    local chunked_location = type(opts) == "table" and opts.chunked_location or nil
    if batch_label ~= nil then
        -- admitted from a batch of leased slots, no check made
        set_var("levee_lease", batch_label)
        count("batched")
    end
    if word == ACCEPTED then
        count(ACCEPTED)
        if rl_policy ~= nil then
            pcall(set_ratelimit, rl_policy, rl_limit)
        end
        return forward_chunked(chunked_location)
    end
    if word == REJECTED then
        count(REJECTED)
        return refuse(retry_after, rl_policy, rl_limit)
    end
    log_failure(reason, policy)
    if policy == "deny" then
        return refuse(1)
    end
    return forward_chunked(chunked_location)
end

--- Answers 503 SlowDown with the Retry-After handed over by attempt() (content of @levee_slowdown).
function _M.slow_down()
    local retry_after = tonumber(ngx.var.levee_retry_after) or 1
    local ok_p, policy = pcall(function() return ngx.var.levee_ratelimit_policy end)
    local ok_l, limit = pcall(function() return ngx.var.levee_ratelimit end)
    return respond_slow_down(retry_after, ok_p and policy or nil, ok_l and limit or nil)
end

--- Returns the counters of the shared dict "levee": { accepted = n, rejected = n, failed = n, batched = n }
-- (batched: the accepted ones admitted from a batch, without a check).
function _M.stats()
    local dict = ngx.shared.levee
    local out = { accepted = 0, rejected = 0, failed = 0, batched = 0 }
    if dict then
        for k in pairs(out) do
            out[k] = dict:get(k) or 0
        end
    end
    return out
end

return _M
