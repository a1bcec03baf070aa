package host

// CheckCredential reports whether c can be presented upstream: the check
// Run applies to every call before anything else, so a tool that stores
// or seals a credential (pinned grant seal) refuses at once what an op
// would later answer api.CodeCredentialInvalid: an empty secret, one with
// a space, a line break or any byte outside printable ASCII (it could not
// be carried in a header, RFC 9110 section 5.5), or an unknown kind. The
// error, when not nil, is an *Error; its message never repeats the
// secret.
func CheckCredential(c Credential) error {
	if herr := checkCredential(c); herr != nil {
		return herr
	}
	return nil
}
