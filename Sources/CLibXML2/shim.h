#ifndef CLIBXML2_SHIM_H
#define CLIBXML2_SHIM_H

// The parts of libxml2 (libxml2-dev, pkg-config libxml-2.0) that LocationGPX uses: the SAX2 push parser.
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/SAX2.h>
#include <libxml/xmlerror.h>
#include <libxml/xmlschemas.h>  // for the tests, which validate the writer's output

#endif
