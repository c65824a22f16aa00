//go:build !unix

package egress

import "os"

// openCredential refuses: without O_NOFOLLOW and an owner check, a
// credential file cannot be opened as ReadCredential documents.
func openCredential(string) (*os.File, error) {
	return nil, &CredentialError{Reason: CredDenied}
}
