package fakeapi

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DNSimple fake: API v2 at api.dnsimple.com.
//
// Routes: GET /v2/whoami, GET /v2/{account}/domains,
// GET /v2/{account}/zones/{zone}/records,
// GET /v2/{account}/registrar/domains/{domain}/check,
// POST /v2/{account}/registrar/domains/{domain}/registrations.
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

type dnsDomain struct {
	ID           int64   `json:"id"`
	AccountID    int64   `json:"account_id"`
	RegistrantID *int64  `json:"registrant_id"`
	Name         string  `json:"name"`
	UnicodeName  string  `json:"unicode_name"`
	State        string  `json:"state"`
	AutoRenew    bool    `json:"auto_renew"`
	PrivateWhois bool    `json:"private_whois"`
	ExpiresAt    *string `json:"expires_at"`
	ExpiresOn    *string `json:"expires_on"`
	CreatedAt    string  `json:"created_at"`
	UpdatedAt    string  `json:"updated_at"`
}

type dnsRecord struct {
	ID           int64    `json:"id"`
	ZoneID       string   `json:"zone_id"`
	ParentID     *int64   `json:"parent_id"`
	Name         string   `json:"name"`
	Content      string   `json:"content"`
	TTL          int      `json:"ttl"`
	Priority     *int     `json:"priority"`
	Type         string   `json:"type"`
	Regions      []string `json:"regions"`
	SystemRecord bool     `json:"system_record"`
	CreatedAt    string   `json:"created_at"`
	UpdatedAt    string   `json:"updated_at"`
}

type dnsRegistration struct {
	ID           int64  `json:"id"`
	DomainID     int64  `json:"domain_id"`
	RegistrantID int64  `json:"registrant_id"`
	Period       int    `json:"period"`
	State        string `json:"state"`
	AutoRenew    bool   `json:"auto_renew"`
	WhoisPrivacy bool   `json:"whois_privacy"`
	CreatedAt    string `json:"created_at"`
	UpdatedAt    string `json:"updated_at"`
}

type dnsimpleAPI struct {
	mu      sync.Mutex
	domains []*dnsDomain
	records map[string][]*dnsRecord // zone name -> records
	nextID  int64
	regID   int64
}

func newDNSimple() *dnsimpleAPI {
	r := newRand(2)
	d := &dnsimpleAPI{records: map[string][]*dnsRecord{}, nextID: 181984, regID: 5001}
	tlds := []string{"com", "io", "dev", "net", "org", "app", "co"}
	seen := map[string]bool{}
	for len(d.domains) < 30 {
		name := choose(r, adjectives) + choose(r, nouns) + "-fake." + choose(r, tlds)
		if seen[name] {
			continue
		}
		seen[name] = true
		created := randTime(r, epoch)
		dom := &dnsDomain{
			ID: d.nextID, AccountID: DNSimpleAccountID, Name: name, UnicodeName: name,
			CreatedAt: iso(created), UpdatedAt: iso(randTime(r, created)),
		}
		d.nextID++
		if r.IntN(4) != 0 {
			rid := int64(DNSimpleRegistrantID)
			exp := time.Date(dataNow.Year()+1, time.Month(1+r.IntN(12)), 1+r.IntN(28), created.Hour(), created.Minute(), 0, 0, time.UTC)
			dom.RegistrantID = &rid
			dom.State = "registered"
			dom.AutoRenew = r.IntN(3) != 0
			dom.PrivateWhois = r.IntN(2) == 0
			dom.ExpiresAt = strptr(iso(exp))
			dom.ExpiresOn = strptr(exp.Format("2006-01-02"))
		} else {
			dom.State = "hosted"
		}
		d.domains = append(d.domains, dom)
	}
	return d
}

// zoneRecords returns the records of a zone, generating them on first use.
// Caller holds d.mu.
func (d *dnsimpleAPI) zoneRecords(dom *dnsDomain) []*dnsRecord {
	if rs, ok := d.records[dom.Name]; ok {
		return rs
	}
	r := newRand(uint64(dom.ID))
	var out []*dnsRecord
	id := dom.ID * 100
	add := func(name, typ, content string, ttl int, prio *int, system bool) {
		id++
		out = append(out, &dnsRecord{ID: id, ZoneID: dom.Name, Name: name, Content: content, TTL: ttl,
			Priority: prio, Type: typ, Regions: []string{"global"}, SystemRecord: system,
			CreatedAt: dom.CreatedAt, UpdatedAt: dom.UpdatedAt})
	}
	add("", "SOA", "ns1.dnsimple.com admin.dnsimple.com 1458642070 86400 7200 604800 300", 3600, nil, true)
	for i := 1; i <= 4; i++ {
		add("", "NS", fmt.Sprintf("ns%d.dnsimple.com", i), 3600, nil, true)
	}
	ip := func() string { return fmt.Sprintf("203.0.113.%d", 1+r.IntN(254)) }
	add("", "A", ip(), 3600, nil, false)
	add("", "AAAA", fmt.Sprintf("2001:db8::%x", 1+r.IntN(0xfffe)), 3600, nil, false)
	add("www", "CNAME", dom.Name, 3600, nil, false)
	for i, mx := range []string{"mx1.mail.example.net", "mx2.mail.example.net"} {
		p := 10 * (i + 1)
		add("", "MX", mx, 3600, &p, false)
	}
	add("", "TXT", "v=spf1 include:_spf.mail.example.net ~all", 3600, nil, false)
	add("_dmarc", "TXT", "v=DMARC1; p=quarantine; rua=mailto:dmarc@"+dom.Name, 3600, nil, false)
	for _, sub := range []string{"api", "app", "status", "docs", "staging"} {
		if r.IntN(2) == 0 {
			add(sub, "A", ip(), 600, nil, false)
		}
	}
	d.records[dom.Name] = out
	return out
}

func (d *dnsimpleAPI) findDomain(name string) *dnsDomain {
	for _, dom := range d.domains {
		if strings.EqualFold(dom.Name, name) || strconv.FormatInt(dom.ID, 10) == name {
			return dom
		}
	}
	return nil
}

func dnsimpleError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"message": msg})
}

func (d *dnsimpleAPI) serve(c *call) {
	h := c.w.Header()
	h.Set("X-RateLimit-Limit", "2400")
	h.Set("X-RateLimit-Remaining", "2399")
	h.Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
	h.Set("X-Request-Id", uuid(rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))))
	if c.checkBearer() != authOK {
		dnsimpleError(c.w, http.StatusUnauthorized, "Authentication failed")
		return
	}
	segs, ok := segments(c.r.URL.EscapedPath())
	if !ok || len(segs) < 2 || segs[0] != "v2" {
		dnsimpleError(c.w, http.StatusNotFound, "Not found")
		return
	}
	m := c.r.Method
	if _, ok := match(segs, "v2", "whoami"); ok && m == http.MethodGet {
		writeJSON(c.w, http.StatusOK, map[string]any{"data": ordered{
			{"user", nil},
			{"account", ordered{
				{"id", DNSimpleAccountID}, {"email", "pinned-tester@example.org"},
				{"plan_identifier", "dnsimple-professional"},
				{"created_at", "2019-03-04T09:12:00Z"}, {"updated_at", "2026-01-15T10:00:00Z"},
			}},
		}})
		return
	}
	// Everything else is under /v2/{account}.
	if segs[1] != strconv.Itoa(DNSimpleAccountID) {
		dnsimpleError(c.w, http.StatusNotFound, fmt.Sprintf("Account `%s` not found", segs[1]))
		return
	}
	if _, ok := match(segs, "v2", "*", "domains"); ok && m == http.MethodGet {
		d.listDomains(c)
		return
	}
	if v, ok := match(segs, "v2", "*", "zones", "*", "records"); ok && m == http.MethodGet {
		d.listRecords(c, v[1])
		return
	}
	if v, ok := match(segs, "v2", "*", "registrar", "domains", "*", "check"); ok && m == http.MethodGet {
		d.check(c, v[1])
		return
	}
	if v, ok := match(segs, "v2", "*", "registrar", "domains", "*", "registrations"); ok && m == http.MethodPost {
		d.register(c, v[1])
		return
	}
	dnsimpleError(c.w, http.StatusNotFound, "Not found")
}

// dnsPage writes DNSimple's {data, pagination} envelope.
func dnsPage[T any](c *call, items []T) {
	q := c.r.URL.Query()
	perPage, ok := intParam(q, "per_page", 30)
	if !ok || perPage < 1 || perPage > 100 {
		dnsimpleError(c.w, http.StatusBadRequest, "Invalid per_page: it must be an integer between 1 and 100")
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
	var out []dnsDomain
	for _, dom := range d.domains {
		if like == "" || strings.Contains(dom.Name, like) {
			out = append(out, *dom)
		}
	}
	d.mu.Unlock()
	if out == nil {
		out = []dnsDomain{}
	}
	dnsPage(c, out)
}

func (d *dnsimpleAPI) listRecords(c *call, zone string) {
	q := c.r.URL.Query()
	d.mu.Lock()
	dom := d.findDomain(zone)
	if dom == nil {
		d.mu.Unlock()
		dnsimpleError(c.w, http.StatusNotFound, fmt.Sprintf("Zone `%s` not found", zone))
		return
	}
	out := []dnsRecord{}
	_, hasName := q["name"]
	for _, rec := range d.zoneRecords(dom) {
		if hasName && rec.Name != q.Get("name") {
			continue
		}
		if t := q.Get("type"); t != "" && !strings.EqualFold(rec.Type, t) {
			continue
		}
		if l := q.Get("name_like"); l != "" && !strings.Contains(rec.Name, l) {
			continue
		}
		out = append(out, *rec)
	}
	d.mu.Unlock()
	dnsPage(c, out)
}

// validDomain is a loose syntax check of a domain name.
func validDomain(name string) bool {
	labels := strings.Split(name, ".")
	if len(name) > 253 || len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// availability follows the rule in the file comment. Caller holds d.mu.
func (d *dnsimpleAPI) availability(name string) (available, premium bool) {
	if d.findDomain(name) != nil {
		return false, false
	}
	first := strings.SplitN(name, ".", 2)[0]
	switch {
	case len(first) <= 3:
		return false, false
	case len(first) <= 5:
		return true, true
	}
	return true, false
}

func (d *dnsimpleAPI) check(c *call, name string) {
	name = strings.ToLower(name)
	if !validDomain(name) {
		dnsimpleError(c.w, http.StatusBadRequest, fmt.Sprintf("`%s` is an invalid domain", name))
		return
	}
	d.mu.Lock()
	avail, premium := d.availability(name)
	d.mu.Unlock()
	writeJSON(c.w, http.StatusOK, map[string]any{"data": ordered{{"domain", name}, {"available", avail}, {"premium", premium}}})
}

func (d *dnsimpleAPI) register(c *call, name string) {
	name = strings.ToLower(name)
	if !validDomain(name) {
		dnsimpleError(c.w, http.StatusBadRequest, fmt.Sprintf("`%s` is an invalid domain", name))
		return
	}
	var in struct {
		RegistrantID *json.Number `json:"registrant_id"`
		WhoisPrivacy *bool        `json:"whois_privacy"`
		AutoRenew    *bool        `json:"auto_renew"`
		PremiumPrice *string      `json:"premium_price"`
	}
	if ct := c.r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		dnsimpleError(c.w, http.StatusBadRequest, "Content-Type must be application/json")
		return
	}
	dec := json.NewDecoder(strings.NewReader(string(c.body)))
	dec.UseNumber()
	if err := dec.Decode(&in); err != nil {
		dnsimpleError(c.w, http.StatusBadRequest, "Invalid JSON body")
		return
	}
	if in.RegistrantID == nil {
		writeJSON(c.w, http.StatusBadRequest, ordered{{"message", "Validation failed"}, {"errors", map[string][]string{"registrant_id": {"can't be blank"}}}})
		return
	}
	rid, err := in.RegistrantID.Int64()
	if err != nil || rid != DNSimpleRegistrantID {
		writeJSON(c.w, http.StatusBadRequest, ordered{{"message", "Validation failed"}, {"errors", map[string][]string{"registrant_id": {"is invalid"}}}})
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	avail, premium := d.availability(name)
	if !avail {
		dnsimpleError(c.w, http.StatusBadRequest, fmt.Sprintf("The domain `%s` is not available for registration", name))
		return
	}
	if premium && in.PremiumPrice == nil {
		dnsimpleError(c.w, http.StatusBadRequest, fmt.Sprintf("`%s` is a premium domain; `premium_price` is required to register it", name))
		return
	}
	now := time.Now().UTC()
	exp := now.AddDate(1, 0, 0)
	dom := &dnsDomain{
		ID: d.nextID, AccountID: DNSimpleAccountID, RegistrantID: &rid, Name: name, UnicodeName: name,
		State: "registered", AutoRenew: in.AutoRenew != nil && *in.AutoRenew,
		PrivateWhois: in.WhoisPrivacy != nil && *in.WhoisPrivacy,
		ExpiresAt:    strptr(iso(exp)), ExpiresOn: strptr(exp.Format("2006-01-02")),
		CreatedAt: iso(now), UpdatedAt: iso(now),
	}
	d.nextID++
	d.domains = append(d.domains, dom)
	reg := dnsRegistration{
		ID: d.regID, DomainID: dom.ID, RegistrantID: rid, Period: 1, State: "new",
		AutoRenew: dom.AutoRenew, WhoisPrivacy: dom.PrivateWhois, CreatedAt: iso(now), UpdatedAt: iso(now),
	}
	d.regID++
	writeJSON(c.w, http.StatusCreated, map[string]any{"data": reg})
}
