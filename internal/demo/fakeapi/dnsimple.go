package fakeapi

import (
	"encoding/json"
	"fmt"
	"github.com/tidwall/gjson"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DNSimple fake: API v2 at api.dnsimple.com (its routes: the table in
// newDNSimple). The domains and their zones' records are recorded
// (testdata/dnsimple/zones.json); a domain registered here has an empty zone.
//
// Availability is predictable: a domain the account already has, or whose
// first label is at most 3 characters, is taken; a first label of 4 or 5
// characters is available but premium (registering it needs premium_price);
// anything else is available.

// DNSimpleAccountID is the id of the fake DNSimple account the tokens
// belong to.
const DNSimpleAccountID = 1385

// DNSimpleRegistrantID is a contact id that exists in the fake account.
const DNSimpleRegistrantID = 2715

type dnsimpleAPI struct {
	mu      sync.Mutex
	tmpl    map[string]gjson.Result
	domains []obj            // the values of the domain template
	records map[string][]obj // zone name -> the values of the record template
	nextID  int64
	regID   int64
	mux     *http.ServeMux
}

// newDNSimple loads the recorded domains and zone records
// (testdata/dnsimple/zones.json).
func newDNSimple() *dnsimpleAPI {
	var z struct {
		Domains []obj
		Records map[string][]obj
	}
	loadData("dnsimple/zones.json", &z)
	d := &dnsimpleAPI{domains: z.Domains, records: z.Records, regID: 5001, tmpl: loadTemplates("dnsimple/templates.json")}
	for _, dom := range d.domains {
		for _, rec := range d.records[dom["name"].(string)] {
			rec["zone"], rec["created_at"], rec["updated_at"] = dom["name"], dom["created_at"], dom["updated_at"]
		}
	}
	d.nextID = int64(d.domains[len(d.domains)-1]["id"].(float64)) + 1
	d.mux = routes{
		"GET /v2/whoami":                                              func(c *call) { writeJSON(c.w, http.StatusOK, fill(d.tmpl["whoami"], nil)) },
		"GET /v2/{account}/domains":                                   d.listDomains,
		"GET /v2/{account}/zones/{zone}/records":                      d.listRecords,
		"GET /v2/{account}/registrar/domains/{domain}/check":          d.check,
		"POST /v2/{account}/registrar/domains/{domain}/registrations": d.register,
	}.mux()
	return d
}

func (d *dnsimpleAPI) findDomain(name string) obj {
	for _, dom := range d.domains {
		if strings.EqualFold(dom["name"].(string), name) || strconv.FormatInt(int64(dom["id"].(float64)), 10) == name {
			return dom
		}
	}
	return nil
}

func (d *dnsimpleAPI) serve(c *call) {
	// Everything but whoami is under /v2/{account}.
	if segs := strings.Split(strings.TrimPrefix(c.r.URL.EscapedPath(), "/"), "/"); len(segs) >= 2 && segs[0] == "v2" && segs[1] != strconv.Itoa(DNSimpleAccountID) && (len(segs) > 2 || segs[1] != "whoami") {
		apiError(c.w, DNSimple, http.StatusNotFound, fmt.Sprintf("Account `%s` not found", segs[1]))
		return
	}
	c.route(d.mux)
}

// dnsPage writes DNSimple's {data, pagination} envelope.
func dnsPage(c *call, items []any) {
	q := c.r.URL.Query()
	perPage, ok := intParam(q, "per_page", 30)
	if !ok || perPage < 1 || perPage > 100 {
		apiError(c.w, DNSimple, http.StatusBadRequest, "Invalid per_page: it must be an integer between 1 and 100")
		return
	}
	page, ok := intParam(q, "page", 1)
	if !ok || page < 1 {
		page = 1
	}
	pages := (len(items) + perPage - 1) / perPage
	writeJSON(c.w, http.StatusOK, ordered{
		{"data", pageSlice(items, perPage, page)},
		{"pagination", ordered{{"current_page", page}, {"per_page", perPage}, {"total_entries", len(items)}, {"total_pages", pages}}},
	})
}

func (d *dnsimpleAPI) listDomains(c *call) {
	like := strings.ToLower(c.r.URL.Query().Get("name_like"))
	d.mu.Lock()
	defer d.mu.Unlock()
	out := []any{}
	for _, dom := range d.domains {
		if like == "" || strings.Contains(dom["name"].(string), like) {
			out = append(out, fill(d.tmpl["domain"], dom))
		}
	}
	dnsPage(c, out)
}

func (d *dnsimpleAPI) listRecords(c *call) {
	zone := c.r.PathValue("zone")
	q := c.r.URL.Query()
	d.mu.Lock()
	defer d.mu.Unlock()
	dom := d.findDomain(zone)
	if dom == nil {
		apiError(c.w, DNSimple, http.StatusNotFound, fmt.Sprintf("Zone `%s` not found", zone))
		return
	}
	out := []any{}
	_, hasName := q["name"]
	for _, rec := range d.records[dom["name"].(string)] {
		switch {
		case hasName && rec["name"] != q.Get("name"):
		case q.Get("type") != "" && !strings.EqualFold(rec["type"].(string), q.Get("type")):
		default:
			out = append(out, fill(d.tmpl["record"], rec))
		}
	}
	dnsPage(c, out)
}

// domainName is a loose syntax check of a domain name: two or more
// labels of letters, digits and inner hyphens, 63 characters at most each.
var domainName = regexp.MustCompile(`^(?i)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$`)

// availability follows the rule in the file comment. Caller holds d.mu.
func (d *dnsimpleAPI) availability(name string) (available, premium bool) {
	first := strings.SplitN(name, ".", 2)[0]
	available = d.findDomain(name) == nil && len(first) > 3
	return available, available && len(first) <= 5
}

// domain returns the request's domain, lower-cased, or answers that it is
// not one.
func domain(c *call) (string, bool) {
	name := strings.ToLower(c.r.PathValue("domain"))
	if len(name) > 253 || !domainName.MatchString(name) {
		apiError(c.w, DNSimple, http.StatusBadRequest, fmt.Sprintf("`%s` is an invalid domain", name))
		return "", false
	}
	return name, true
}

func (d *dnsimpleAPI) check(c *call) {
	if name, ok := domain(c); ok {
		d.mu.Lock()
		avail, premium := d.availability(name)
		d.mu.Unlock()
		writeJSON(c.w, http.StatusOK, map[string]any{"data": ordered{{"domain", name}, {"available", avail}, {"premium", premium}}})
	}
}

func (d *dnsimpleAPI) register(c *call) {
	name, ok := domain(c)
	if !ok {
		return
	}
	var in struct {
		RegistrantID *json.Number `json:"registrant_id"`
		WhoisPrivacy *bool        `json:"whois_privacy"`
		AutoRenew    *bool        `json:"auto_renew"`
		PremiumPrice *string      `json:"premium_price"`
	}
	invalid := func(msg string) { // DNSimple's validation envelope
		writeJSON(c.w, http.StatusBadRequest, ordered{{"message", "Validation failed"}, {"errors", map[string][]string{"registrant_id": {msg}}}})
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	avail, premium := d.availability(name)
	switch err := json.Unmarshal(c.body, &in); {
	case err != nil || in.RegistrantID == nil:
		invalid("can't be blank")
	case in.RegistrantID.String() != strconv.Itoa(DNSimpleRegistrantID):
		invalid("is invalid")
	case !avail:
		apiError(c.w, DNSimple, http.StatusBadRequest, fmt.Sprintf("The domain `%s` is not available for registration", name))
	case premium && in.PremiumPrice == nil:
		apiError(c.w, DNSimple, http.StatusBadRequest, fmt.Sprintf("`%s` is a premium domain; `premium_price` is required to register it", name))
	default:
		now := time.Now().UTC()
		exp := now.AddDate(1, 0, 0)
		dom := obj{"id": float64(d.nextID), "registrant_id": DNSimpleRegistrantID, "name": name, "state": "registered",
			"auto_renew": in.AutoRenew != nil && *in.AutoRenew, "private_whois": in.WhoisPrivacy != nil && *in.WhoisPrivacy,
			"expires_at": iso(exp), "expires_on": exp.Format("2006-01-02"), "created_at": iso(now), "updated_at": iso(now)}
		d.nextID++
		d.domains = append(d.domains, dom)
		writeJSON(c.w, http.StatusCreated, fill(d.tmpl["registration"], map[string]any{"id": d.regID, "domain_id": dom["id"],
			"registrant_id": DNSimpleRegistrantID, "auto_renew": dom["auto_renew"], "whois_privacy": dom["private_whois"], "now": iso(now)}))
		d.regID++
	}
}
