//go:build wasip1

// Command egress is a hostile guest: it ignores the executor and submits a
// crafted request, chosen by the harness's "attack" (hpin.Input), straight
// to pin_v1.request. It prints the code the host returned ("code=<n>") on
// stdout.
//
// The attack "mut" renders the honest request for the op's args with the
// shipped executor and then changes it as the harness's "mut" list says
// (mutations below), so one guest attacks every op of every manifest: the
// request-binding suite (TestBindingEveryOp) changes exactly one rendered
// element per case. With no harness line at all (a run outside the host's
// tests, e.g. the sidecar's end-to-end test) the guest retargets the
// honest request: it replaces the first two path segments after the first
// with "acme-fake" and "amber-beacon" (for github.create_issue, the
// repository the caller's text is posted to).
package main

import (
	"strings"

	"github.com/elevenmessenger/pinned/host/testdata/hostile/hpin"
	"github.com/elevenmessenger/pinned/internal/jsonv"
)

const (
	base    = "https://api.github.com/repos/octo/hello/issues"
	accept  = `["Accept","application/vnd.github+json"]`
	version = `["X-GitHub-Api-Version","2022-11-28"]`
)

func get(url string, headers ...string) string {
	return `{"method":"GET","url":"` + url + `","headers":[` + strings.Join(append([]string{accept}, headers...), ",") + `]}`
}

// attacks maps each attack to the request it submits. The op under attack
// is GitHub list_issues (GET /repos/{owner}/{repo}/issues) unless the name
// says create_.
var attacks = map[string]string{
	"other_host":              get("https://evil.example.com/repos/octo/hello/issues"),
	"host_upper_case":         get("https://API.GITHUB.COM/repos/octo/hello/issues"),
	"host_trailing_dot":       get("https://api.github.com./repos/octo/hello/issues"),
	"host_suffix":             get("https://api.github.com.evil.example/repos/octo/hello/issues"),
	"ipv4_literal":            get("https://140.82.112.6/repos/octo/hello/issues"),
	"ipv6_literal":            get("https://[2606:50c0:8000::154]/repos/octo/hello/issues"),
	"ipv6_loopback_bracketed": get("https://[::1]/repos/octo/hello/issues"),
	"decimal_host":            get("https://2130706433/repos/octo/hello/issues"),
	"octal_host":              get("https://0177.0.0.1/repos/octo/hello/issues"),
	"hex_host":                get("https://0x7f000001/repos/octo/hello/issues"),
	"port_8443":               get("https://api.github.com:8443/repos/octo/hello/issues"),
	"port_443_explicit":       get("https://api.github.com:443/repos/octo/hello/issues"),
	"http_scheme":             get("http://api.github.com/repos/octo/hello/issues"),
	"scheme_upper_case":       get("HTTPS://api.github.com/repos/octo/hello/issues"),
	"userinfo":                get("https://user:pass@api.github.com/repos/octo/hello/issues"),
	"userinfo_host_confusion": get("https://api.github.com@evil.example.com/repos/octo/hello/issues"),
	"fragment":                get(base + "#frag"),
	"path_other_endpoint":     get("https://api.github.com/user/repos"),
	"path_extra_segment":      get(base + "/extra"),
	"path_dot_dot":            get("https://api.github.com/repos/../hello/issues"),
	"path_dot_dot_encoded":    get("https://api.github.com/repos/%2e%2e/hello/issues"),
	"path_dot_dot_mixed":      get("https://api.github.com/repos/.%2E/hello/issues"),
	"path_encoded_slash":      get("https://api.github.com/repos/octo%2Fevil/hello/issues"),
	"path_encoded_backslash":  get("https://api.github.com/repos/octo%5Cevil/hello/issues"),
	"path_bad_escape":         get("https://api.github.com/repos/octo%zz/hello/issues"),
	"path_empty_segment":      get("https://api.github.com/repos//hello/issues"),
	"query_undeclared_key":    get(base + "?access_token=x"),
	"query_duplicate_key":     get(base + "?state=open&state=closed"),
	"query_empty":             get(base + "?"),
	"body_on_get":             `{"method":"GET","url":"` + base + `","headers":[` + accept + `],"body":"{}"}`,
	"method_other":            `{"method":"DELETE","url":"` + base + `","headers":[` + accept + `]}`,
	"method_lower_case":       `{"method":"get","url":"` + base + `","headers":[` + accept + `]}`,
	"crlf_in_header_value":    get(base, `["X-GitHub-Api-Version","2022-11-28\r\nX-Evil: 1"]`),
	"crlf_in_path":            get("https://api.github.com/repos/octo\\r\\nHost: evil/hello/issues"),
	"space_in_url":            get("https://api.github.com/repos/octo hello/hello/issues"),
	"non_ascii_in_url":        get("https://api.github.com/repos/\u00e9/hello/issues"),
	"set_authorization":       get(base, `["Authorization","Bearer stolen"]`),
	"set_authorization_lower": get(base, `["authorization","Bearer stolen"]`),
	"set_cookie":              get(base, `["Cookie","session=x"]`),
	"set_host":                get(base, `["Host","evil.example.com"]`),
	"set_proxy_authorization": get(base, `["Proxy-Authorization","Basic eDp4"]`),
	"set_accept_encoding":     get(base, `["Accept-Encoding","identity"]`),
	"set_content_length":      get(base, `["Content-Length","5"]`),
	"set_transfer_encoding":   get(base, `["Transfer-Encoding","chunked"]`),
	"set_x_forwarded_for":     get(base, `["X-Forwarded-For","127.0.0.1"]`),
	"header_undeclared":       get(base, `["X-Evil","1"]`),
	"header_value_changed":    `{"method":"GET","url":"` + base + `","headers":[["Accept","text/html"]]}`,
	"header_duplicate":        get(base, accept),
	"header_bad_name":         get(base, `["Bad Name","1"]`),
	"malformed_json":          `{"method":"GET",`,
	"unknown_member":          `{"method":"GET","url":"` + base + `","headers":[],"proxy":"http://evil"}`,
	"create_body_not_json":    `{"method":"POST","url":"https://api.github.com/repos/octo/hello/issues","headers":[],"body":"title=x"}`,
	"create_body_missing":     `{"method":"POST","url":"https://api.github.com/repos/octo/hello/issues","headers":[]}`,
}

func main() {}

// request is a decoded request encoding (docs/ABI.md, "The request").
type request struct {
	method, url string
	headers     [][2]string
	body        string
	hasBody     bool
}

func decode(enc string) *request {
	v, err := jsonv.Parse([]byte(enc))
	if err != nil {
		return nil
	}
	r := &request{method: v.Get("method").S, url: v.Get("url").S}
	for _, h := range v.Get("headers").A {
		r.headers = append(r.headers, [2]string{h.A[0].S, h.A[1].S})
	}
	if b := v.Get("body"); b != nil {
		r.body, r.hasBody = b.S, true
	}
	return r
}

func (r *request) encode() string {
	out := []byte(`{"method":`)
	out = jsonv.AppendString(out, r.method)
	out = append(out, `,"url":`...)
	out = jsonv.AppendString(out, r.url)
	out = append(out, `,"headers":[`...)
	for i, h := range r.headers {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, '[')
		out = jsonv.AppendString(out, h[0])
		out = append(out, ',')
		out = jsonv.AppendString(out, h[1])
		out = append(out, ']')
	}
	out = append(out, ']')
	if r.hasBody {
		out = append(out, `,"body":`...)
		out = jsonv.AppendString(out, r.body)
	}
	return string(append(out, '}'))
}

// pairs splits "a=1&b=2" (nil for "").
func pairs(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "&")
}

// setPair applies f to the pair whose key is key (f returns the new pair,
// "" to drop it); add appends pair when no key matched.
func setPair(ps []string, key string, f func(string) string) []string {
	var out []string
	for _, p := range ps {
		k, _, _ := strings.Cut(p, "=")
		if k == key {
			if np := f(p); np != "" {
				out = append(out, np)
			}
			continue
		}
		out = append(out, p)
	}
	return out
}

// bodyLeaf finds the value at a "/"-separated path of object keys and
// array indices.
func bodyLeaf(v *jsonv.Value, path string) *jsonv.Value {
	if path == "" {
		return v
	}
	for _, k := range strings.Split(path, "/") {
		switch v.Kind {
		case jsonv.Object:
			v = v.Get(k)
		case jsonv.Array:
			i := 0
			for _, c := range k {
				i = i*10 + int(c-'0')
			}
			if i >= len(v.A) {
				return nil
			}
			v = &v.A[i]
		default:
			return nil
		}
		if v == nil {
			return nil
		}
	}
	return v
}

// change alters a JSON value in place so that it is different but of the
// same kind where one can be.
func change(v *jsonv.Value) {
	switch v.Kind {
	case jsonv.String:
		v.S += "z"
	case jsonv.Number:
		v.S = "9" + strings.TrimPrefix(v.S, "-") // another number
	case jsonv.Bool:
		v.B = !v.B
	case jsonv.Null:
		*v = jsonv.Value{Kind: jsonv.Number, S: "0"}
	case jsonv.Object:
		v.O = append(v.O, jsonv.Member{Key: "zz", Value: jsonv.Value{Kind: jsonv.Number, S: "1"}})
	case jsonv.Array:
		v.A = append(v.A, jsonv.Value{Kind: jsonv.Number, S: "1"})
	}
}

// mutate applies one mutation to r:
//
//	path:<i>:<raw>   path segment i (after the leading "/") becomes raw
//	pathz:<i>        "z" appended to path segment i
//	qz:<key>         "z" appended to the value of query key
//	qset:<key>=<raw> query key set to raw (added when absent)
//	qdel:<key>       query key removed
//	qadd:<pair>      pair appended to the query
//	bz:<path>        the body value at path changed (see change)
//	bset:<path>=<j>  the body value at path replaced by JSON j
//	badd             a member "zz":1 added to the body object
//	braw:<text>      the body replaced by text, byte for byte (escapes the
//	                 executor never writes, e.g. a lone "\ud800")
//	fz:<key>, fset:<key>=<raw>, fdel:<key>, fadd:<pair>: the form body
//	hdel:<name>      the header removed
//	hz:<name>        "z" appended to the header's value
//	hadd:<name>:<v>  a header appended
//	hnone            no header at all
//	host:<authority> the URL's authority replaced (another tenant's host)
func mutate(r *request, m string) {
	op, arg, _ := strings.Cut(m, ":")
	base, query, _ := strings.Cut(r.url, "?")
	const scheme = "https://"
	slash := strings.IndexByte(base[len(scheme):], '/') + len(scheme)
	origin, path := base[:slash], base[slash+1:]
	segs := strings.Split(path, "/")
	qs := pairs(query)
	switch op {
	case "path", "pathz":
		idx, raw, _ := strings.Cut(arg, ":")
		i := 0
		for _, c := range idx {
			i = i*10 + int(c-'0')
		}
		switch {
		case i >= len(segs):
		case op == "pathz":
			segs[i] += "z"
		default:
			segs[i] = raw
		}
	case "qz":
		qs = setPair(qs, arg, func(p string) string { return p + "z" })
	case "qset":
		k, _, _ := strings.Cut(arg, "=")
		found := false
		qs = setPair(qs, k, func(string) string { found = true; return arg })
		if !found {
			qs = append(qs, arg)
		}
	case "qdel":
		qs = setPair(qs, arg, func(string) string { return "" })
	case "qadd":
		qs = append(qs, arg)
	case "fz", "fset", "fdel", "fadd":
		fs := pairs(r.body)
		switch op {
		case "fz":
			fs = setPair(fs, arg, func(p string) string { return p + "z" })
		case "fset":
			k, _, _ := strings.Cut(arg, "=")
			fs = setPair(fs, k, func(string) string { return arg })
		case "fdel":
			fs = setPair(fs, arg, func(string) string { return "" })
		case "fadd":
			fs = append(fs, arg)
		}
		r.body = strings.Join(fs, "&")
	case "braw":
		r.body = arg
	case "bz", "bset", "badd":
		v, err := jsonv.Parse([]byte(r.body))
		if err != nil {
			return
		}
		switch op {
		case "bz":
			if leaf := bodyLeaf(&v, arg); leaf != nil {
				change(leaf)
			}
		case "bset":
			p, j, _ := strings.Cut(arg, "=")
			nv, err := jsonv.Parse([]byte(j))
			if leaf := bodyLeaf(&v, p); leaf != nil && err == nil {
				*leaf = nv
			} else if leaf == nil && err == nil {
				// A member the honest request lacks: add it to its parent.
				parent, key := "", p
				if i := strings.LastIndexByte(p, '/'); i >= 0 {
					parent, key = p[:i], p[i+1:]
				}
				if o := bodyLeaf(&v, parent); o != nil && o.Kind == jsonv.Object {
					o.O = append(o.O, jsonv.Member{Key: key, Value: nv})
				}
			}
		case "badd":
			v.O = append(v.O, jsonv.Member{Key: "zz", Value: jsonv.Value{Kind: jsonv.Number, S: "1"}})
		}
		r.body = string(jsonv.Append(nil, v))
	case "hdel", "hz":
		var hs [][2]string
		for _, h := range r.headers {
			if strings.EqualFold(h[0], arg) {
				if op == "hz" {
					hs = append(hs, [2]string{h[0], h[1] + "z"})
				}
				continue
			}
			hs = append(hs, h)
		}
		r.headers = hs
	case "hadd":
		n, v, _ := strings.Cut(arg, ":")
		r.headers = append(r.headers, [2]string{n, v})
	case "hnone":
		r.headers = [][2]string{}
	case "host":
		origin = scheme + arg
	}
	r.url = origin + "/" + strings.Join(segs, "/")
	if len(qs) > 0 {
		r.url += "?" + strings.Join(qs, "&")
	}
}

// mutated is the honest request with the mutations applied ("" when the
// executor rejected the args).
func mutated(muts []string) string {
	h := hpin.Honest()
	if h == "" {
		return ""
	}
	r := decode(h)
	for _, m := range muts {
		mutate(r, m)
	}
	return r.encode()
}

//go:wasmexport run
func run() int32 {
	name, harness := hpin.Attack()
	var code int32
	switch {
	case harness == nil:
		// No harness: retarget the honest request (see the package doc).
		code = hpin.Request(mutated([]string{"path:1:acme-fake", "path:2:amber-beacon"}))
	case name == "mut":
		var muts []string
		if l := harness.Get("mut"); l != nil {
			for _, m := range l.A {
				muts = append(muts, m.S)
			}
		}
		code = hpin.Request(mutated(muts))
	case name == "honest":
		code = hpin.Request(hpin.Honest())
	case name == "oversized":
		code = hpin.Request(get(base + "?state=" + strings.Repeat("a", 300<<10)))
	case name == "deny_then_retry":
		hpin.Request(attacks["other_host"])
		code = hpin.Request(hpin.Honest())
	default:
		req, ok := attacks[name]
		if !ok {
			hpin.Print("unknown attack " + name + "\n")
			return -1
		}
		code = hpin.Request(req)
	}
	hpin.Print("code=" + hpin.Itoa(int64(code)) + "\n")
	return code
}
