package upstream

import (
	"fmt"
	"strings"
	"testing"

	"github.com/elevenmessenger/pinned/host/internal/pick"
)

const echoSecret = "ghp_fake_pinned_github_token_000000000000"

// TestEchoes: what counts as data echoing the credential. Each row is a
// spelling a hostile provider tried, or one that must not count.
func TestEchoes(t *testing.T) {
	tests := []struct {
		name string
		data string
		want bool
	}{
		{"no echo", `{"login":"pinned-tester","id":1}`, false},
		{"whole token", `{"login":"` + echoSecret + `","id":1}`, true},
		{"16 characters of it", `{"name":"x pinned_github_tok y"}`, true},
		{"15 characters are not an echo", `{"name":"pinned_github_t"}`, false},
		{"every 8th byte escaped", `{"name":"ghp_fak\u0065_pinned\u005fgithub_\u0074oken_00\u00300000000\u00300"}`, true},
		{"escaped after 1e400", `{"login":"pinned-tester","id":1e400,"name":"ghp_fak\u0065_pinned\u005fgithub_\u0074oken_00\u00300000000\u00300"}`, true},
		{"after a 400-digit integer", `{"id":` + strings.Repeat("7", 400) + `,"name":"` + echoSecret + `"}`, true},
		{"in a key", `{"` + echoSecret + `":1}`, true},
		{"split across strings by numbers", `{"a":"ghp_fake_pin","n":1e400,"b":"ned_github_token"}`, true},
		{"split across array elements", `["ghp_fake","_pinned_git",5,"hub_token"]`, true},
		{"split across keys", `{"ghp_fake_pin":1,"ned_github_t":2}`, true},
		{"pieces joined by spaces", `{"m":"ghp_fak e_pinne d_githu b_token"}`, true},
		{"pieces joined by U+200B", `{"m":"ghp_fak\u200be_pinne\u200bd_githu"}`, true},
		{"raw U+200B", "{\"m\":\"ghp_fake_\u200bpinned_github\"}", true},
		{"a top-level string", `"` + echoSecret + `"`, true},
		{"invalid JSON fails closed", `{"a":`, true},
		{"trailing data fails closed", `{"a":1} {"b":2}`, true},
		{"null", `null`, false},
		{"empty", ``, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Echoes([]byte(tt.data), echoSecret); got != tt.want {
				t.Fatalf("Echoes(%s) = %v, want %v", tt.data, got, tt.want)
			}
		})
	}
	t.Run("short secrets are not looked for", func(t *testing.T) {
		if Echoes([]byte(`{"a":"abc"}`), "abc") {
			t.Fatal("a 3-character secret matched")
		}
	})
}

// FuzzEchoes is the property of docs/SECURITY.md rule 3: for any answer
// holding the credential in any JSON spelling — every character escaped
// or not, cut into pieces across members, huge numbers before and
// between them — the projection either refuses the answer or returns data
// the echo check withholds; and the check itself never stops early.
func FuzzEchoes(f *testing.F) {
	f.Add([]byte{0x80, 0x01}, []byte{41}, []byte{1})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, []byte{7, 7, 7, 7, 7, 7}, []byte{0, 1, 2, 3, 4, 5})
	f.Add([]byte{0x01, 0x02}, []byte{3, 5, 9}, []byte{2, 2})
	numbers := []string{"", "1", "1e400", strings.Repeat("9", 400), "-0.5e-9", strings.Repeat("1", 5000), "0"}
	f.Fuzz(func(t *testing.T, escapes, cuts, nums []byte) {
		var doc strings.Builder
		var fields []string
		doc.WriteString("{")
		rest, i := echoSecret, 0
		for rest != "" {
			n := len(rest)
			if i < len(cuts) {
				n = min(int(cuts[i]%40)+1, len(rest))
			}
			if i < len(nums) && numbers[int(nums[i])%len(numbers)] != "" {
				fmt.Fprintf(&doc, `"n%d":%s,`, i, numbers[int(nums[i])%len(numbers)])
				fields = append(fields, fmt.Sprintf("n%d", i))
			}
			fmt.Fprintf(&doc, `"s%d":"`, i)
			for _, c := range []byte(rest[:n]) {
				k := len(echoSecret) - len(rest)
				if k/8 < len(escapes) && escapes[k/8]&(1<<(k%8)) != 0 {
					fmt.Fprintf(&doc, `\u%04x`, c)
				} else {
					doc.WriteByte(c)
				}
				rest = rest[1:]
			}
			doc.WriteString(`",`)
			fields = append(fields, fmt.Sprintf("s%d", i))
			i++
		}
		doc.WriteString(`"z":true}`)
		raw := []byte(doc.String())
		if !Echoes(raw, echoSecret) {
			t.Fatalf("the answer itself is not judged an echo: %s", raw)
		}
		out, err := pick.New("", fields).Project(nil, raw)
		if err == nil && !Echoes(out, echoSecret) {
			t.Fatalf("picked data %s passes the echo check", out)
		}
	})
}

// BenchmarkEchoes: the check on a result the size of 100 GitHub repos.
func BenchmarkEchoes(b *testing.B) {
	var doc strings.Builder
	doc.WriteString("[")
	for i := range 100 {
		if i > 0 {
			doc.WriteString(",")
		}
		fmt.Fprintf(&doc, `{"id":%d,"name":"repo-%d","full_name":"pinned-tester/repo-%d","private":false,"html_url":"https://github.com/pinned-tester/repo-%d","description":"A repository \u00e9 with a description of some length, %d","fork":false,"language":"Go","stargazers_count":%d,"updated_at":"2026-01-02T03:04:05Z"}`, i, i, i, i, i, i*7)
	}
	doc.WriteString("]")
	data := []byte(doc.String())
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if Echoes(data, echoSecret, "ghr_refresh_token_0123456789abcdef") {
			b.Fatal("echo")
		}
	}
}
