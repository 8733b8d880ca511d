-- rate.lua: Levee's enforcement point in NGINX (docs/nginx.md). Works with Debian/Ubuntu nginx +
-- libnginx-mod-http-lua and with OpenResty.
--
-- Used from every S3 location as
--
--     access_by_lua_block { require("rate").attempt("/.levee", { on_failure = "allow" }) }
--
-- attempt() makes one subrequest to the internal location "/.levee" (levee-check.conf.in), which
-- proxy_passes to the local levee-client over a keep-alive upstream. That location sends the raw
-- facts of the S3 request as X-Levee-* headers (method, Host, request URI with its query string,
-- x-amz-copy-source) and nothing else: no body, no Content-Length, no Transfer-Encoding, no
-- Expect. levee-client answers
--
--     200 + X-Levee-Result: accepted  -> the request continues to the S3 backend
--     429 + X-Levee-Result: rejected  -> 503 SlowDown (S3 XML error body, Retry-After, request id)
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
-- The client's body is never read here. A refused request that announced a body is handed to the
-- named location @levee_slowdown (keepalive_timeout 0): the 503 goes out without "100 Continue"
-- and NGINX then closes the connection (lingering close) instead of reading the upload to discard
-- it. A refused request without a body keeps its keep-alive connection.
--
-- The check's timeout is the internal location's proxy_*_timeout: a subrequest cannot be
-- abandoned from Lua, so there is no per-call timeout option here (docs/nginx.md).

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

local ACCEPTED = "accepted"
local REJECTED = "rejected"
local FAILED = "failed"

local SLOWDOWN_LOCATION = "@levee_slowdown"
local SLOWDOWN_MESSAGE = "Please reduce your request rate."

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

-- Writes the 503 SlowDown response (AWS S3 REST error response) and ends the request.
local function respond_slow_down(retry_after, policy, limit)
    local uri = ngx.var.request_uri or "/"
    local q = find(uri, "?", 1, true)
    local path = q and sub(uri, 1, q - 1) or uri
    local request_id = ngx.var.request_id or ""
    local body = '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code><Message>'
            .. SLOWDOWN_MESSAGE .. "</Message><Resource>" .. xml_escape(path) .. "</Resource><RequestId>"
            .. request_id .. "</RequestId></Error>\n"
    ngx.status = ngx.HTTP_SERVICE_UNAVAILABLE
    ngx.header["Content-Type"] = "application/xml"
    ngx.header["Content-Length"] = #body
    ngx.header["Retry-After"] = retry_after
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
    if announces_body() then
        -- no "100 Continue" for an upload we refuse, and no reading it: @levee_slowdown closes
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

local CHECK_PLAIN = { method = HTTP_GET }
local CHECK_WITH_FIELDS = { method = HTTP_GET, args = "ratelimit=1" }

-- Asks levee-client through the internal location; returns the result word, Retry-After
-- (seconds), when failed the reason, and the RateLimit-Policy and RateLimit values (or nil).
local function check(location, on_accept)
    if type(location) ~= "string" or location == "" then
        error("the check location must be a path such as \"/.levee\", got " .. tostring(location))
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
    local res = capture(location, on_accept and CHECK_WITH_FIELDS or CHECK_PLAIN)
    local result = res.header["X-Levee-Result"]
    if res.status == 200 and result == ACCEPTED then
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

local function policy_of(opts)
    if opts == nil then
        return "allow", false
    end
    if type(opts) ~= "table" then
        error("options must be a table such as { on_failure = \"allow\" }")
    end
    local policy = opts.on_failure or "allow"
    if policy ~= "allow" and policy ~= "deny" then
        error("on_failure must be \"allow\" or \"deny\", got " .. tostring(policy))
    end
    local on_accept = opts.ratelimit_on_accept
    if on_accept ~= nil and on_accept ~= true and on_accept ~= false then
        error("ratelimit_on_accept must be true or false, got " .. tostring(on_accept))
    end
    return policy, on_accept == true
end

--- Checks the current request with Levee and enforces the decision (access phase).
-- @param location internal location that proxies to levee-client, e.g. "/.levee" (".levee" works too)
-- @param opts     { on_failure = "allow" | "deny" (default "allow"),
--                   ratelimit_on_accept = true | false (default false) }
function _M.attempt(location, opts)
    local policy = "allow"
    local ok, word, retry_after, reason, rl_policy, rl_limit = pcall(function()
        local on_accept
        policy, on_accept = policy_of(opts)
        return check(location, on_accept)
    end)
    if not ok then
        -- word holds the error message
        word, reason = FAILED, "lua error: " .. tostring(word)
    end
    set_var("levee_result", word)
    if word == ACCEPTED then
        count(ACCEPTED)
        if rl_policy ~= nil then
            pcall(set_ratelimit, rl_policy, rl_limit)
        end
        return
    end
    if word == REJECTED then
        count(REJECTED)
        return refuse(retry_after, rl_policy, rl_limit)
    end
    log_failure(reason, policy)
    if policy == "deny" then
        return refuse(1)
    end
end

--- Answers 503 SlowDown with the Retry-After handed over by attempt() (content of @levee_slowdown).
function _M.slow_down()
    local retry_after = tonumber(ngx.var.levee_retry_after) or 1
    local ok_p, policy = pcall(function() return ngx.var.levee_ratelimit_policy end)
    local ok_l, limit = pcall(function() return ngx.var.levee_ratelimit end)
    return respond_slow_down(retry_after, ok_p and policy or nil, ok_l and limit or nil)
end

--- Returns the counters of the shared dict "levee": { accepted = n, rejected = n, failed = n }.
function _M.stats()
    local dict = ngx.shared.levee
    local out = { accepted = 0, rejected = 0, failed = 0 }
    if dict then
        for k in pairs(out) do
            out[k] = dict:get(k) or 0
        end
    end
    return out
end

return _M
