//go:build wasip1

// Command egress is a hostile guest: it ignores the executor and submits a
// crafted request, chosen by the "attack" arg, straight to pin_v1.request.
// It prints the code the host returned ("code=<n>") on stdout.
package main

import (
	"strings"

	"github.com/elevenmessenger/pinned/host/testdata/hostile/hpin"
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
	"valid":                   get(base + "?state=open"),
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

//go:wasmexport run
func run() int32 {
	name, _ := hpin.Attack()
	var code int32
	switch name {
	case "oversized":
		code = hpin.Request(get(base + "?state=" + strings.Repeat("a", 300<<10)))
	case "deny_then_retry":
		hpin.Request(attacks["other_host"])
		code = hpin.Request(attacks["valid"])
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
