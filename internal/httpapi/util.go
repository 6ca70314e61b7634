package httpapi

import "reflect"

func reflectTypeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }
