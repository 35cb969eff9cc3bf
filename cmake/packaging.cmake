# The service files and the Debian packages (docs/packaging.md):
#   cpack --config build/CPackConfig.cmake -B build/packages
# gives wopbridge_<version>_<arch>.deb (the binary, the connector modules, /etc/wopbridge, a
# hardened systemd unit) and wopbridge-dev (the SDK headers, its static library, the CMake package).
# The /etc and systemd files are part of the packages only: EXCLUDE_FROM_ALL keeps a plain
# `cmake --install` (into any prefix) away from the system's folders.
set(pkg ${PROJECT_SOURCE_DIR}/packaging)
install(FILES ${pkg}/wopbridge.yaml DESTINATION /etc/wopbridge COMPONENT runtime EXCLUDE_FROM_ALL)
install(FILES ${pkg}/wopbridge.service DESTINATION /lib/systemd/system COMPONENT runtime
        EXCLUDE_FROM_ALL)
install(FILES ${pkg}/wopbridge.sysusers DESTINATION lib/sysusers.d RENAME wopbridge.conf
        COMPONENT runtime EXCLUDE_FROM_ALL)
install(FILES README.md CHANGELOG.md RELIABILITY.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT runtime EXCLUDE_FROM_ALL)

# What Debian asks of every binary package's doc folder: a machine-readable copyright file naming
# the license in /usr/share/common-licenses, and the Debian changelog, compressed reproducibly
# (gzip -n: no name or time stamp). The manual page likewise.
# Both are set before configure_file reads them: on a first configure a later set() would leave
# the changelog's trailer line without a maintainer.
set(WOPBRIDGE_PACKAGE_MAINTAINER "wopbridge developers <wopbridge@example.org>" CACHE STRING
    "The Maintainer field of the .deb packages")
set(WOPBRIDGE_RELEASE_DATE "Fri, 04 Dec 2026 00:00:00 +0000" CACHE STRING
    "The date of the release, in the Debian changelog (RFC 5322)")
set(pkg_out ${PROJECT_BINARY_DIR}/packaging)
configure_file(${pkg}/debian/changelog.in ${pkg_out}/changelog @ONLY)
configure_file(${pkg}/wopbridge.1 ${pkg_out}/wopbridge.1 @ONLY)
add_custom_command(
  OUTPUT ${pkg_out}/changelog.gz ${pkg_out}/wopbridge.1.gz
  COMMAND gzip -9nkf ${pkg_out}/changelog ${pkg_out}/wopbridge.1
  DEPENDS ${pkg_out}/changelog ${pkg_out}/wopbridge.1
  COMMENT "Compressing the Debian changelog and the manual page")
add_custom_target(wopbridge_package_docs ALL
                  DEPENDS ${pkg_out}/changelog.gz ${pkg_out}/wopbridge.1.gz)
set(package_of_runtime wopbridge)
set(package_of_dev wopbridge-dev)
set(wopbridge_components runtime dev)
foreach(c ${WOPBRIDGE_SEPARATELY_PACKAGED_CONNECTORS})
  set(package_of_connector_${c} wopbridge-connector-${c})
  list(APPEND wopbridge_components connector_${c})
endforeach()
foreach(component ${wopbridge_components})
  install(FILES ${pkg}/debian/copyright ${pkg_out}/changelog.gz
          DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${package_of_${component}}
          COMPONENT ${component} EXCLUDE_FROM_ALL)
endforeach()
install(FILES ${pkg_out}/wopbridge.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
        COMPONENT runtime EXCLUDE_FROM_ALL)
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT runtime EXCLUDE_FROM_ALL
        FILES_MATCHING PATTERN "*.md" PATTERN images EXCLUDE)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME wopbridge)
set(CPACK_PACKAGE_VENDOR wopbridge)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${WOPBRIDGE_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL ${wopbridge_components})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/wopbridge/wopbridge")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME wopbridge)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS "systemd")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "adduser, init-system-helpers (>= 1.54~)")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA
    ${pkg}/debian/postinst ${pkg}/debian/prerm ${pkg}/debian/postrm ${pkg}/debian/conffiles)
# The synopsis, then the extended description in lines of at most 80 characters.
string(CONCAT CPACK_COMPONENT_RUNTIME_DESCRIPTION
    "durable inbound triggers for workflow runs (OpenWOP trigger bridge)\n"
    "Channels (signed webhooks, Slack, email, SMS, HTML forms, schedules, queues)\n"
    "reach workflow runs through one durable contract: a 2xx only after commit and\n"
    "fsync, dedup, retry with backoff, a readable and replayable dead-letter sink,\n"
    "and content-free audit events.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME wopbridge-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "wopbridge (= ${PROJECT_VERSION}), libssl-dev, libboost-json1.81-dev, cmake (>= 3.25)")
string(CONCAT CPACK_COMPONENT_DEV_DESCRIPTION
    "SDK for wopbridge connector modules\n"
    "The versioned C ABI header, the header-only C++ wrapper, the static helper\n"
    "library and the CMake package: find_package(wopbridge) and\n"
    "wopbridge_add_connector().")
# A package per module that links a broker client: what it reads from, and the library it pulls.
set(connector_what_kafka "Apache Kafka topics (librdkafka)")
set(connector_what_nats "NATS JetStream streams (nats.c)")
set(connector_what_queue "Redis Streams (hiredis)")
set(connector_what_rabbitmq "RabbitMQ queues (rabbitmq-c)")
set(separate_packages "")
foreach(c ${WOPBRIDGE_SEPARATELY_PACKAGED_CONNECTORS})
  string(TOUPPER connector_${c} C)
  set(CPACK_DEBIAN_${C}_PACKAGE_NAME wopbridge-connector-${c})
  set(CPACK_DEBIAN_${C}_PACKAGE_SHLIBDEPS ON)
  set(CPACK_DEBIAN_${C}_PACKAGE_DEPENDS "wopbridge (= ${PROJECT_VERSION})")
  string(CONCAT CPACK_COMPONENT_${C}_DESCRIPTION
      "wopbridge connector module: ${connector_what_${c}}\n"
      "Feeds wopbridge subscriptions from ${connector_what_${c}}, with the\n"
      "bridge's durable contract: a message is acknowledged to the broker only\n"
      "after its event is committed.")
  list(APPEND separate_packages wopbridge-connector-${c})
endforeach()
# A webhook-only install stays without the broker libraries; apt suggests the modules.
list(JOIN separate_packages ", " CPACK_DEBIAN_RUNTIME_PACKAGE_SUGGESTS)

include(CPack)
