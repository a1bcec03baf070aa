package upstream

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/elevenmessenger/pinned/host/internal/pick"
	"github.com/elevenmessenger/pinned/registry"
)

// rateLimited recognizes the rate limits of DESIGN.md: HTTP 429, GitHub's
// 403 secondary limit (Retry-After, or X-RateLimit-Remaining: 0), and a
// GraphQL error with extensions.code RATELIMITED (Linear, HTTP 400 or 200).
// It returns the seconds to wait (at least 1).
func rateLimited(m *registry.Manifest, resp *http.Response, raw []byte) (int, bool) {
	h := resp.Header
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
	case resp.StatusCode == http.StatusForbidden && (h.Get("Retry-After") != "" || h.Get("X-RateLimit-Remaining") == "0"):
	case m.GraphQL && graphQLRateLimitedBody(raw):
	default:
		return 0, false
	}
	return retryAfter(h, time.Now()), true
}

// retryAfter reads Retry-After (delta-seconds or HTTP-date, RFC 9110
// section 10.2.3), then X-RateLimit-Reset (epoch seconds, GitHub), then
// X-RateLimit-Requests-Reset (epoch milliseconds, Linear); default 60.
func retryAfter(h http.Header, now time.Time) int {
	clamp := func(s int64) int {
		if s < 1 {
			return 1
		}
		if s > 86400 {
			return 86400
		}
		return int(s)
	}
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return clamp(n)
		}
		if t, err := http.ParseTime(v); err == nil {
			return clamp(int64(t.Sub(now).Seconds() + 0.999))
		}
	}
	if v := h.Get("X-RateLimit-Reset"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return clamp(n - now.Unix())
		}
	}
	if v := h.Get("X-RateLimit-Requests-Reset"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return clamp((n - now.UnixMilli() + 999) / 1000)
		}
	}
	return 60
}

func graphQLRateLimitedBody(raw []byte) bool {
	_, limited, _ := pick.GraphQLErrors(raw)
	return limited
}
