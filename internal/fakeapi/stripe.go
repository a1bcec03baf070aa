package fakeapi

import (
	"fmt"
	"math/rand/v2"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"
)

// Stripe fake: API v1 at api.stripe.com (form-encoded requests, JSON
// answers with alphabetically ordered keys, as Stripe sends them).
//
// Routes: GET /v1/account, GET /v1/customers, POST /v1/customers,
// GET /v1/customers/{id}, GET /v1/charges, GET /v1/balance.

// StripeAccountID is the id of the fake Stripe account.
const StripeAccountID = "acct_1FakePinnedDemo0"

const stripeDefaultVersion = "2024-06-20"

type stripeAPI struct {
	mu        sync.Mutex
	rnd       *rand.Rand
	tmpl      map[string]any   // testdata/stripe/templates.json
	customers []map[string]any // newest first
	charges   []map[string]any // newest first
}

// newStripe loads the recorded customers and charges
// (testdata/stripe/objects.json) into their templates.
func newStripe() *stripeAPI {
	s := &stripeAPI{rnd: newRand(33)}
	loadData("stripe/templates.json", &s.tmpl)
	var d struct{ Customers, Charges []map[string]any }
	loadData("stripe/objects.json", &d)
	for _, v := range d.Customers {
		s.customers = append(s.customers, fill(s.tmpl["customer"], v).(map[string]any))
	}
	for _, v := range d.Charges {
		s.charges = append(s.charges, fill(s.tmpl["charge"], v).(map[string]any))
	}
	return s
}

// stripeError writes Stripe's {"error": {...}} envelope.
func stripeError(w http.ResponseWriter, status int, msg, code, param string) {
	e := map[string]any{"message": msg, "type": "invalid_request_error"}
	if code != "" {
		e["code"] = code
		e["doc_url"] = "https://stripe.com/docs/error-codes/" + strings.ReplaceAll(code, "_", "-")
	}
	if param != "" {
		e["param"] = param
	}
	if status >= 400 && status != http.StatusUnauthorized {
		e["request_log_url"] = "https://dashboard.stripe.com/test/logs/req_fake"
	}
	writeJSON(w, status, map[string]any{"error": e})
}

func (s *stripeAPI) serve(c *call) {
	ver := c.r.Header.Get("Stripe-Version")
	if ver == "" {
		ver = stripeDefaultVersion
	}
	c.w.Header().Set("Stripe-Version", ver)
	if !c.authenticate() {
		return
	}
	s.mu.Lock()
	customers, charges := s.customers, s.charges
	s.mu.Unlock()
	c.route(
		route{"GET", "/v1/account", func(c *call, _ []string) { stripeJSON(c.w, http.StatusOK, s.tmpl["account"]) }},
		route{"GET", "/v1/balance", s.balance},
		route{"GET", "/v1/customers", func(c *call, _ []string) { s.list(c, "/v1/customers", "customer", customers, "email") }},
		route{"POST", "/v1/customers", s.createCustomer},
		route{"GET", "/v1/customers/*", func(c *call, v []string) {
			for _, o := range customers {
				if o["id"] == v[0] {
					stripeJSON(c.w, http.StatusOK, o)
					return
				}
			}
			stripeError(c.w, http.StatusNotFound, fmt.Sprintf("No such customer: '%s'", v[0]), "resource_missing", "id")
		}},
		route{"GET", "/v1/charges", func(c *call, _ []string) { s.list(c, "/v1/charges", "charge", charges, "customer") }},
	)
}

// stripeOrder converts maps into objects ordered as Stripe sends them:
// "id" and "object" first, then the other keys alphabetically.
func stripeOrder(v any) any {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			if k != "id" && k != "object" {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		out := make(ordered, 0, len(x))
		for _, k := range []string{"id", "object"} {
			if e, ok := x[k]; ok {
				out = append(out, kv{k, stripeOrder(e)})
			}
		}
		for _, k := range keys {
			out = append(out, kv{k, stripeOrder(x[k])})
		}
		return out
	case []map[string]any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = stripeOrder(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = stripeOrder(e)
		}
		return out
	}
	return v
}

// stripeJSON writes a Stripe answer in Stripe's key order.
func stripeJSON(w http.ResponseWriter, status int, v any) { writeJSON(w, status, stripeOrder(v)) }

// list serves a Stripe list endpoint: limit, starting_after, ending_before
// and a filter (the parameter of that name equals the member of that
// name), in the {object: "list", data, has_more, url} envelope. The slice
// is newest first and never modified in place (writes replace it).
func (s *stripeAPI) list(c *call, path, kind string, all []map[string]any, filter string) {
	q := c.r.URL.Query()
	keep := func(o map[string]any, q url.Values) bool { return q.Get(filter) == "" || o[filter] == q.Get(filter) }
	for k := range q {
		switch k {
		case "limit", "starting_after", "ending_before", "email", "customer", "created":
		default:
			stripeError(c.w, http.StatusBadRequest, "Received unknown parameter: "+k, "parameter_unknown", k)
			return
		}
	}
	limit, ok := intParam(q, "limit", 10)
	if !ok {
		stripeError(c.w, http.StatusBadRequest, "Invalid integer: "+q.Get("limit"), "parameter_invalid_integer", "limit")
		return
	}
	if limit < 1 || limit > 100 {
		stripeError(c.w, http.StatusBadRequest, "This value must be greater than or equal to 1 and less than or equal to 100.", "parameter_invalid_integer", "limit")
		return
	}
	var filtered []map[string]any
	for _, o := range all {
		if keep(o, q) {
			filtered = append(filtered, o)
		}
	}
	var start, end int // set by each case below
	cursor := func(param string) (int, bool) {
		id := q.Get(param)
		for i, o := range all {
			if o["id"] == id {
				// Position in the filtered list of the first element after
				// (or before) the cursor object.
				n := 0
				for _, f := range all[:i] {
					if keep(f, q) {
						n++
					}
				}
				return n, true
			}
		}
		stripeError(c.w, http.StatusBadRequest, fmt.Sprintf("No such %s: '%s'", kind, id), "resource_missing", param)
		return 0, false
	}
	hasMore := false
	switch {
	case q.Get("starting_after") != "":
		n, ok := cursor("starting_after")
		if !ok {
			return
		}
		start = n
		if start < len(filtered) && filtered[start]["id"] == q.Get("starting_after") {
			start++
		}
		end = min(len(filtered), start+limit)
		hasMore = end < len(filtered)
	case q.Get("ending_before") != "":
		n, ok := cursor("ending_before")
		if !ok {
			return
		}
		end = n
		start = max(0, end-limit)
		hasMore = start > 0
	default:
		end = min(len(filtered), limit)
		hasMore = end < len(filtered)
	}
	data := filtered[start:end]
	if data == nil {
		data = []map[string]any{}
	}
	stripeJSON(c.w, http.StatusOK, map[string]any{"object": "list", "data": data, "has_more": hasMore, "url": path})
}

func (s *stripeAPI) balance(c *call, _ []string) {
	s.mu.Lock()
	avail := 0
	for _, ch := range s.charges {
		if ch["paid"] == true {
			avail += int(ch["amount"].(float64) - ch["amount_refunded"].(float64))
		}
	}
	s.mu.Unlock()
	pending := avail / 9
	stripeJSON(c.w, http.StatusOK, fill(s.tmpl["balance"], map[string]any{"available": avail - pending, "pending": pending}))
}

func (s *stripeAPI) createCustomer(c *call, _ []string) {
	mt, _, _ := mime.ParseMediaType(c.r.Header.Get("Content-Type"))
	if len(c.body) > 0 && mt != "application/x-www-form-urlencoded" {
		stripeError(c.w, http.StatusBadRequest, "Invalid request (check that your POST content type is application/x-www-form-urlencoded). If you have any questions, we can help at https://support.stripe.com/.", "", "")
		return
	}
	form, err := url.ParseQuery(string(c.body))
	if err != nil {
		stripeError(c.w, http.StatusBadRequest, "Invalid request: the body is not valid form encoding.", "", "")
		return
	}
	meta := map[string]any{}
	for k, v := range form {
		switch {
		case k == "email" || k == "name" || k == "description" || k == "phone":
			if len(v) != 1 {
				stripeError(c.w, http.StatusBadRequest, "Invalid string: "+k+" was given more than once", "parameter_invalid_string", k)
				return
			}
		case strings.HasPrefix(k, "metadata[") && strings.HasSuffix(k, "]"):
			meta[k[len("metadata["):len(k)-1]] = v[0]
		default:
			stripeError(c.w, http.StatusBadRequest, "Received unknown parameter: "+k, "parameter_unknown", k)
			return
		}
	}
	email := form.Get("email")
	if email != "" && (!strings.Contains(email, "@") || strings.ContainsAny(email, " \t\r\n")) {
		stripeError(c.w, http.StatusBadRequest, "Invalid email address: "+email, "email_invalid", "email")
		return
	}
	opt := func(k string) any {
		if _, ok := form[k]; !ok || form.Get(k) == "" {
			return nil
		}
		return form.Get(k)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cust := fill(s.tmpl["customer"], map[string]any{"id": "cus_" + randString(s.rnd, 14, alnum), "address": nil, "created": time.Now().Unix(),
		"currency": nil, "delinquent": false, "description": opt("description"), "email": opt("email"),
		"invoice_prefix": randString(s.rnd, 8, "0123456789ABCDEF"), "metadata": meta, "name": opt("name"),
		"next_invoice_sequence": 1, "phone": opt("phone")}).(map[string]any)
	// Replace, never modify, the slice: list handlers read it unlocked.
	s.customers = append([]map[string]any{cust}, s.customers...)
	stripeJSON(c.w, http.StatusOK, cust)
}
