//go:build linux && !(amd64 || arm64)

package sandbox

import "errors"

var errNoUffd = errors.New("write-protect tracking is built for amd64 and arm64 only")

type pageRegion struct{ start, end, categories uint64 }

func userfault() (int, error)                                     { return -1, errNoUffd }
func wpRegister([]byte) error                                     { return errNoUffd }
func wpProtect([]byte) error                                      { return errNoUffd }
func scanChanged(int, []byte, []pageRegion, []int) ([]int, error) { return nil, errNoUffd }
