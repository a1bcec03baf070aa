package fakeapi

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
)

// HubSpot fake: CRM v3 and account-info v3 at api.hubapi.com (its routes:
// the table in newHubSpot).

// hsObject is one CRM object (a row of testdata/hubspot/objects.json).
type hsObject struct {
	ID        int64             `json:"id"`
	Props     map[string]string `json:"properties"` // every set property
	CreatedAt string            `json:"createdAt"`
	UpdatedAt string            `json:"updatedAt"`
}

// hsKind is one CRM object type (testdata/hubspot/crm.json).
type hsKind struct {
	name     string   // "contacts"
	Schema   []string // known property names
	Defaults []string // properties returned when none are asked for
	Always   []string // properties returned whatever is asked for
}

// hsData is testdata/hubspot/crm.json.
var hsData = func() (d struct {
	Account             jsonTemplate
	Contacts, Companies *hsKind
}) {
	loadData("hubspot/crm.json", &d)
	d.Contacts.name, d.Companies.name = "contacts", "companies"
	return d
}()

var hsContacts, hsCompanies = hsData.Contacts, hsData.Companies

type hubspotAPI struct {
	mu      sync.Mutex
	objects map[*hsKind][]*hsObject // ascending id
	nextID  int64
	mux     *http.ServeMux
}

// newHubSpot loads the recorded CRM objects (testdata/hubspot/objects.json).
func newHubSpot() *hubspotAPI {
	var d struct{ Contacts, Companies []*hsObject }
	loadData("hubspot/objects.json", &d)
	h := &hubspotAPI{objects: map[*hsKind][]*hsObject{hsContacts: d.Contacts, hsCompanies: d.Companies}}
	h.nextID = d.Contacts[len(d.Contacts)-1].ID
	h.id() // the next id after the last recorded one
	h.mux = routes{
		"GET /account-info/v3/details":      func(c *call) { writeJSON(c.w, http.StatusOK, fill(hsData.Account.Result, nil)) },
		"GET /crm/v3/objects/contacts":      func(c *call) { h.list(c, hsContacts) },
		"POST /crm/v3/objects/contacts":     h.createContact,
		"GET /crm/v3/objects/contacts/{id}": func(c *call) { h.get(c, hsContacts, c.r.PathValue("id")) },
		"GET /crm/v3/objects/companies":     func(c *call) { h.list(c, hsCompanies) },
	}.mux()
	return h
}

func (h *hubspotAPI) id() int64 {
	id := h.nextID
	h.nextID += 1 + int64(h.nextID%7)
	return id
}

// view renders an object as HubSpot does with the asked-for properties.
func (k *hsKind) view(o *hsObject, asked []string) ordered {
	want := k.Defaults
	if len(asked) > 0 {
		want = append([]string{}, k.Always...)
		for _, a := range asked {
			if slices.Contains(k.Schema, a) {
				want = append(want, a)
			}
		}
	}
	id := strconv.FormatInt(o.ID, 10)
	props, derived := map[string]any{}, map[string]string{"createdate": o.CreatedAt, "lastmodifieddate": o.UpdatedAt, "hs_lastmodifieddate": o.UpdatedAt, "hs_object_id": id}
	for _, p := range want {
		v, ok := derived[p]
		if !ok {
			v, ok = o.Props[p]
		}
		if props[p] = nil; ok {
			props[p] = v
		}
	}
	return ordered{{"id", id}, {"properties", props}, {"createdAt", o.CreatedAt}, {"updatedAt", o.UpdatedAt}, {"archived", false}}
}

// askedProperties parses the properties parameter (comma-separated,
// repeatable).
func askedProperties(q url.Values) []string {
	return strings.FieldsFunc(strings.Join(q["properties"], ","), func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
}

// list pages a kind's objects by id cursor (limit, after) in HubSpot's
// {results, paging: {next: {after, link}}} envelope.
func (h *hubspotAPI) list(c *call, k *hsKind) {
	q := c.r.URL.Query()
	limit, ok := intParam(q, "limit", 10)
	after, err := strconv.ParseInt(cmp.Or(q.Get("after"), "0"), 10, 64)
	switch {
	case !ok || limit < 1 || limit > 100:
		apiError(c.w, HubSpot, http.StatusBadRequest, "limit must be an integer between 1 and 100")
		return
	case err != nil || after < 0:
		apiError(c.w, HubSpot, http.StatusBadRequest, fmt.Sprintf("Invalid input JSON on line 1: after %q is not a valid paging cursor", q.Get("after")))
		return
	}
	asked := askedProperties(q)
	h.mu.Lock()
	defer h.mu.Unlock()
	all := h.objects[k]
	i := sort.Search(len(all), func(i int) bool { return all[i].ID >= after })
	end := min(len(all), i+limit)
	results := []ordered{}
	for _, o := range all[i:end] {
		results = append(results, k.view(o, asked))
	}
	out := ordered{{"results", results}}
	if end < len(all) {
		next := strconv.FormatInt(all[end].ID, 10)
		nq := url.Values{"after": {next}, "limit": {strconv.Itoa(limit)}}
		if len(asked) > 0 {
			nq.Set("properties", strings.Join(asked, ","))
		}
		link := "https://api.hubapi.com/crm/v3/objects/" + k.name + "?" + nq.Encode()
		out = append(out, kv{"paging", ordered{{"next", ordered{{"after", next}, {"link", link}}}}})
	}
	writeJSON(c.w, http.StatusOK, out)
}

func (h *hubspotAPI) get(c *call, k *hsKind, id string) {
	asked := askedProperties(c.r.URL.Query())
	h.mu.Lock()
	defer h.mu.Unlock()
	if i := slices.IndexFunc(h.objects[k], func(o *hsObject) bool { return strconv.FormatInt(o.ID, 10) == id }); i >= 0 {
		writeJSON(c.w, http.StatusOK, k.view(h.objects[k][i], asked))
	} else {
		apiError(c.w, HubSpot, http.StatusNotFound, "Object not found.  objectId are usually numeric.")
	}
}

func (h *hubspotAPI) createContact(c *call) {
	var in struct {
		Properties map[string]any `json:"properties"`
	}
	err := json.Unmarshal(c.body, &in)
	props, names, bad := map[string]string{}, slices.Sorted(maps.Keys(in.Properties)), ""
	for _, k := range slices.Backward(names) { // the first bad property is reported
		switch v, isStr := in.Properties[k].(string); {
		case !slices.Contains(hsContacts.Schema, k) || k == "hs_object_id" || k == "createdate" || k == "lastmodifieddate":
			bad = fmt.Sprintf("[{\"isValid\":false,\"message\":\"Property \\\"%s\\\" does not exist\",\"error\":\"PROPERTY_DOESNT_EXIST\",\"name\":\"%s\"}]", k, k)
		case isStr:
			props[k] = v
		}
	}
	email := strings.ToLower(props["email"])
	if bad == "" && email != "" && !validEmail(email) {
		bad = fmt.Sprintf("[{\"isValid\":false,\"message\":\"Email address %s is invalid\",\"error\":\"INVALID_EMAIL\",\"name\":\"email\"}]", email)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	dup := slices.IndexFunc(h.objects[hsContacts], func(o *hsObject) bool { return email != "" && strings.EqualFold(o.Props["email"], email) })
	switch {
	case err != nil || in.Properties == nil:
		apiError(c.w, HubSpot, http.StatusBadRequest, "Invalid input JSON on line 1, column 1: a JSON object with \"properties\" is required")
	case bad != "":
		apiError(c.w, HubSpot, http.StatusBadRequest, "Property values were not valid: "+bad)
	case dup >= 0:
		apiError(c.w, HubSpot, http.StatusConflict, fmt.Sprintf("Contact already exists. Existing ID: %d", h.objects[hsContacts][dup].ID))
	default:
		now := isoMilli(time.Now())
		o := &hsObject{ID: h.id(), Props: props, CreatedAt: now, UpdatedAt: now}
		h.objects[hsContacts] = append(h.objects[hsContacts], o)
		writeJSON(c.w, http.StatusCreated, hsContacts.view(o, append(names, "lastmodifieddate")))
	}
}
