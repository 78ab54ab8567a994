#ifndef CLIBXML2_SHIM_H
#define CLIBXML2_SHIM_H

// The parts of libxml2 (libxml2-dev, pkg-config libxml-2.0) that LocationGPX uses: the SAX2 push parser.

// Debian's libxml2 is built with ICU, and <libxml/encoding.h> then includes the system's ICU headers.
// Their `enum UErrorCode` clashes with the newer one in Foundation's _FoundationICU module as soon as
// both modules meet in one Swift file ("… is not present in definition of 'enum UErrorCode' in module
// 'CLibXML2'"). Nothing here needs ICU: the only difference the macro makes is two pointer fields at the
// end of xmlCharEncodingHandler, a struct LocationGPX only ever handles by pointer.
#include <libxml/xmlversion.h>
#undef LIBXML_ICU_ENABLED

#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/SAX2.h>
#include <libxml/xmlerror.h>
#include <libxml/xmlschemas.h>  // for the tests, which validate the writer's output

#endif
