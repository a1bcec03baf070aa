package fakeapi

import (
	"fmt"
	"github.com/tidwall/gjson"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// Stripe fake: API v1 at api.stripe.com, version 2024-06-20 (its routes:
// the table in newStripe). The account's customers and charges are
// recorded (testdata/stripe/objects.json) and filled into the templates
// (templates.json, in Stripe's key order) as they are served.

// StripeAccountID is the id of the fake Stripe account.
const StripeAccountID = "acct_1FakePinnedDemo0"

type stripeAPI struct {
	mu      sync.Mutex
	tmpl    map[string]gjson.Result     // testdata/stripe/templates.json, in Stripe's key order
	objects map[string][]map[string]any // kind -> the values of its template, newest first
	mux     *http.ServeMux
}

// newStripe loads the templates and the recorded customers and charges
// (testdata/stripe/objects.json).
func newStripe() *stripeAPI {
	var d struct{ Customers, Charges []map[string]any }
	loadData("stripe/objects.json", &d)
	s := &stripeAPI{tmpl: loadTemplates("stripe/templates.json"), objects: map[string][]map[string]any{"customer": d.Customers, "charge": d.Charges}}
	s.mux = routes{
		"GET /v1/account":    func(c *call) { writeJSON(c.w, http.StatusOK, fill(s.tmpl["account"], nil)) },
		"GET /v1/balance":    func(c *call) { writeJSON(c.w, http.StatusOK, fill(s.tmpl["balance"], nil)) },
		"GET /v1/customers":  func(c *call) { s.list(c, "customer", "email") },
		"POST /v1/customers": s.createCustomer,
		"GET /v1/charges":    func(c *call) { s.list(c, "charge", "customer") },
	}.mux()
	return s
}

// stripeError writes Stripe's {"error": {...}} envelope; a code links its
// documentation (doc_url).
func stripeError(w http.ResponseWriter, status int, msg, code, param string) {
	doc := ""
	if code != "" {
		doc = "https://stripe.com/docs/error-codes/" + strings.ReplaceAll(code, "_", "-")
	}
	apiError(w, Stripe, status, msg, "code", code, "param", param, "doc_url", doc)
}

// list serves a Stripe list of kind ("customer", "charge", newest first):
// limit, starting_after and a filter (the parameter of that name equals
// the member of that name), in the {object: "list", data, has_more, url}
// envelope.
func (s *stripeAPI) list(c *call, kind, filter string) {
	s.mu.Lock()
	all := s.objects[kind]
	s.mu.Unlock()
	q := c.r.URL.Query()
	limit, ok := intParam(q, "limit", 10)
	after := q.Get("starting_after")
	cursor := slices.IndexFunc(all, func(o map[string]any) bool { return o["id"] == after })
	switch {
	case !ok || limit < 1 || limit > 100:
		stripeError(c.w, http.StatusBadRequest, "This value must be greater than or equal to 1 and less than or equal to 100.", "parameter_invalid_integer", "limit")
	case after != "" && cursor < 0:
		stripeError(c.w, http.StatusBadRequest, fmt.Sprintf("No such %s: '%s'", kind, after), "resource_missing", "starting_after")
	default:
		// The page: the objects the filter keeps after the cursor's position.
		data, more := []any{}, false
		for i, o := range all {
			if i <= cursor || q.Get(filter) != "" && o[filter] != q.Get(filter) {
				continue
			} else if len(data) == limit {
				more = true
				break
			}
			data = append(data, fill(s.tmpl[kind], o))
		}
		writeJSON(c.w, http.StatusOK, ordered{{"object", "list"}, {"data", data}, {"has_more", more}, {"url", "/v1/" + kind + "s"}})
	}
}

func (s *stripeAPI) createCustomer(c *call) {
	mt, _, _ := mime.ParseMediaType(c.r.Header.Get("Content-Type"))
	form, err := url.ParseQuery(string(c.body))
	email, unknown := form.Get("email"), ""
	for k := range form {
		if !slices.Contains([]string{"email", "name", "description", "phone"}, k) {
			unknown = k
		}
	}
	switch {
	case len(c.body) > 0 && mt != "application/x-www-form-urlencoded":
		stripeError(c.w, http.StatusBadRequest, "Invalid request (check that your POST content type is application/x-www-form-urlencoded). If you have any questions, we can help at https://support.stripe.com/.", "", "")
	case err != nil:
		stripeError(c.w, http.StatusBadRequest, "Invalid request: the body is not valid form encoding.", "", "")
	case unknown != "":
		stripeError(c.w, http.StatusBadRequest, "Received unknown parameter: "+unknown, "parameter_unknown", unknown)
	case email != "" && !validEmail(email):
		stripeError(c.w, http.StatusBadRequest, "Invalid email address: "+email, "email_invalid", "email")
	default:
		cust := map[string]any{"id": mint([]any{"cus_", "alnum", 14.0}), "address": nil, "created": time.Now().Unix(), "currency": nil, "delinquent": false,
			"invoice_prefix": strings.ToUpper(mint([]any{"", "hex", 8.0})), "metadata": map[string]any{}, "next_invoice_sequence": 1}
		for _, k := range []string{"description", "email", "name", "phone"} {
			if cust[k] = nil; form.Get(k) != "" {
				cust[k] = form.Get(k)
			}
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		// Replace, never modify, the slice: list handlers read it unlocked.
		s.objects["customer"] = append([]map[string]any{cust}, s.objects["customer"]...)
		writeJSON(c.w, http.StatusOK, fill(s.tmpl["customer"], cust))
	}
}
