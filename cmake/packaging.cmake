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
install(FILES README.md CHANGELOG.md LICENSE RELIABILITY.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT runtime EXCLUDE_FROM_ALL)
install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME copyright COMPONENT runtime
        EXCLUDE_FROM_ALL)
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT runtime EXCLUDE_FROM_ALL
        FILES_MATCHING PATTERN "*.md" PATTERN images EXCLUDE)

set(WOPBRIDGE_PACKAGE_MAINTAINER "wopbridge developers <wopbridge@example.org>" CACHE STRING
    "The Maintainer field of the .deb packages")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME wopbridge)
set(CPACK_PACKAGE_VENDOR wopbridge)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${WOPBRIDGE_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/wopbridge/wopbridge")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME wopbridge)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS "systemd")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA
    ${pkg}/debian/postinst ${pkg}/debian/prerm ${pkg}/debian/postrm ${pkg}/debian/conffiles)
string(CONCAT CPACK_COMPONENT_RUNTIME_DESCRIPTION
    "durable inbound triggers for workflow runs (OpenWOP trigger bridge)\n"
    "Channels (signed webhooks, Slack, email, SMS, HTML forms, schedules, queues) reach workflow\n"
    "runs through one durable contract: a 2xx only after commit and fsync, dedup, retry with\n"
    "backoff, a readable and replayable dead-letter sink, and content-free audit events.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME wopbridge-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "wopbridge (= ${PROJECT_VERSION}), libssl-dev, libboost-json1.81-dev, cmake (>= 3.25)")
string(CONCAT CPACK_COMPONENT_DEV_DESCRIPTION
    "SDK for wopbridge connector modules\n"
    "The versioned C ABI header, the header-only C++ wrapper, the static helper library and the\n"
    "CMake package: find_package(wopbridge) and wopbridge_add_connector().")
include(CPack)
