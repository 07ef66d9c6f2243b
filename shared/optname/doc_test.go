package optname_test

import (
	"fmt"

	"github.com/windowlimit/windowlimit/shared/optname"
)

func ExampleNearest() {
	_, near := optname.Nearest("limt", []string{"window", "limit", "algorithm"})
	fmt.Println(near)
	// Output: limit
}
